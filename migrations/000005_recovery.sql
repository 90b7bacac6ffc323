-- Recovery of interrupted tasks: the assessment made when a task was found interrupted, and what the
-- person recorded about each effect whose outcome was unknown.
--
-- Both are fact tables: they refuse UPDATE and DELETE. An assessment is written in the same transaction
-- as the task's move to recovery-required (and again when the person reconciles). A resolution names an
-- outcome-unknown tool execution or model request of the same task, at most once per effect; the effect
-- row itself never changes and the effect is never run again.

CREATE TABLE recovery_assessments (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    interrupted_in TEXT NOT NULL CHECK (interrupted_in IN (
        'forecasting', 'running', 'awaiting-authority', 'validating', 'recovery-required')),
    known_json TEXT NOT NULL CHECK (json_valid(known_json) AND json_type(known_json) = 'object'
                                    AND length(known_json) <= 65536),
    ambiguous_json TEXT NOT NULL CHECK (json_valid(ambiguous_json) AND json_type(ambiguous_json) = 'array'
                                        AND length(ambiguous_json) <= 262144),
    recommended TEXT NOT NULL CHECK (recommended IN ('safe-resume', 'reconcile', 'preserve-patch', 'abandon')),
    diff_identity TEXT CHECK (diff_identity IS NULL OR (length(diff_identity) = 64
                                                        AND diff_identity NOT GLOB '*[^0-9a-f]*')),
    reason TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 2048),
    assessed_at_us INTEGER NOT NULL
) STRICT;

CREATE INDEX recovery_assessments_by_task ON recovery_assessments (task_id, id);

CREATE TRIGGER recovery_assessments_are_immutable
BEFORE UPDATE ON recovery_assessments
BEGIN
    SELECT RAISE(ABORT, 'recovery assessments are immutable');
END;

CREATE TRIGGER recovery_assessments_are_never_deleted
BEFORE DELETE ON recovery_assessments
BEGIN
    SELECT RAISE(ABORT, 'recovery assessments are never deleted');
END;

CREATE TABLE ambiguity_resolutions (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    item_kind TEXT NOT NULL CHECK (item_kind IN ('tool-execution', 'model-request')),
    item_id TEXT NOT NULL CHECK (length(item_id) BETWEEN 1 AND 128),
    outcome TEXT NOT NULL CHECK (outcome IN ('happened', 'did-not-happen')),
    note TEXT CHECK (note IS NULL OR length(note) BETWEEN 1 AND 2048),
    recorded_by TEXT NOT NULL CHECK (recorded_by = 'user'),
    recorded_at_us INTEGER NOT NULL,
    UNIQUE (item_kind, item_id)
) STRICT;

CREATE INDEX ambiguity_resolutions_by_task ON ambiguity_resolutions (task_id, id);

CREATE TRIGGER ambiguity_resolutions_name_an_unknown_outcome_of_their_task
BEFORE INSERT ON ambiguity_resolutions
WHEN NOT ((NEW.item_kind = 'tool-execution'
           AND EXISTS (SELECT 1 FROM tool_executions
                       WHERE id = NEW.item_id AND task_id = NEW.task_id AND state = 'outcome-unknown'))
          OR (NEW.item_kind = 'model-request'
              AND EXISTS (SELECT 1 FROM model_requests
                          WHERE id = NEW.item_id AND task_id = NEW.task_id AND state = 'outcome-unknown')))
BEGIN
    SELECT RAISE(ABORT, 'a resolution names an outcome-unknown effect of its own task');
END;

CREATE TRIGGER ambiguity_resolutions_are_immutable
BEFORE UPDATE ON ambiguity_resolutions
BEGIN
    SELECT RAISE(ABORT, 'ambiguity resolutions are immutable');
END;

CREATE TRIGGER ambiguity_resolutions_are_never_deleted
BEFORE DELETE ON ambiguity_resolutions
BEGIN
    SELECT RAISE(ABORT, 'ambiguity resolutions are never deleted');
END;
