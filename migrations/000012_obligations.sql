-- Obligations: what a pipeline stage found the change owes, one row per (task, attempt, kind, subject), and how
-- each one's state changed (docs/pipeline.md, "Obligations").
--
-- obligations holds what was recorded, once: the kind (composition: a changed atom calling another changed or
-- added atom; control-path: a branch arc on a changed line; effect; review-finding), the subject (its identity
-- inside the attempt, e.g. "pkg.calc.total -> pkg.calc.add" or "pkg/calc.py:4->7"), the stage that recorded it
-- and its detail (a JSON object: the call site, the arc's lines). obligation_states holds each state the
-- obligation entered, numbered from 1 without gaps: it opens `open`; `discharged` names the stage that
-- discharged it (required, and only then); `regressed` says a discharge no longer holds. The newest row is the
-- obligation's state. Both are facts: they refuse UPDATE and DELETE.

CREATE TABLE obligations (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    kind TEXT NOT NULL CHECK (kind IN ('composition', 'control-path', 'effect', 'review-finding')),
    subject TEXT NOT NULL CHECK (length(subject) BETWEEN 1 AND 1024),
    recorded_by_stage TEXT NOT NULL CHECK (length(recorded_by_stage) BETWEEN 1 AND 64
                                           AND recorded_by_stage NOT GLOB '*[^a-z-]*'),
    detail_json TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail_json) AND json_type(detail_json) = 'object'
                                                  AND length(CAST(detail_json AS BLOB)) <= 65536),
    recorded_at_us INTEGER NOT NULL,
    UNIQUE (task_id, attempt, kind, subject),
    FOREIGN KEY (task_id, attempt) REFERENCES task_runs (task_id, attempt)
) STRICT;

CREATE TABLE obligation_states (
    id INTEGER PRIMARY KEY,
    obligation_id INTEGER NOT NULL REFERENCES obligations (id),
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    state TEXT NOT NULL CHECK (state IN ('open', 'discharged', 'regressed')),
    discharged_by_stage TEXT CHECK (discharged_by_stage IS NULL OR (length(discharged_by_stage) BETWEEN 1 AND 64
                                                                    AND discharged_by_stage NOT GLOB '*[^a-z-]*')),
    evidence_json TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(evidence_json) AND json_type(evidence_json) = 'object'
                                                    AND length(CAST(evidence_json AS BLOB)) <= 65536),
    recorded_at_us INTEGER NOT NULL,
    UNIQUE (obligation_id, sequence),
    CHECK ((state = 'discharged') = (discharged_by_stage IS NOT NULL))
) STRICT;

-- A state follows the obligation's newest one: the first is open; discharged follows open or regressed;
-- regressed follows open or discharged (never the same state twice in a row).
CREATE TRIGGER obligation_states_follow_in_order
BEFORE INSERT ON obligation_states
WHEN NEW.sequence IS NOT (SELECT count(*) + 1 FROM obligation_states WHERE obligation_id = NEW.obligation_id)
  OR (NEW.sequence = 1 AND NEW.state IS NOT 'open')
  OR (NEW.sequence > 1 AND NEW.state IS 'open')
  OR NEW.state IS (SELECT state FROM obligation_states WHERE obligation_id = NEW.obligation_id
                   ORDER BY sequence DESC LIMIT 1)
BEGIN
    SELECT RAISE(ABORT, 'an obligation opens, then changes state one step at a time');
END;

CREATE TRIGGER obligations_are_immutable
BEFORE UPDATE ON obligations
BEGIN
    SELECT RAISE(ABORT, 'obligations are immutable');
END;

CREATE TRIGGER obligations_are_never_deleted
BEFORE DELETE ON obligations
BEGIN
    SELECT RAISE(ABORT, 'obligations are never deleted');
END;

CREATE TRIGGER obligation_states_are_immutable
BEFORE UPDATE ON obligation_states
BEGIN
    SELECT RAISE(ABORT, 'obligation states are immutable');
END;

CREATE TRIGGER obligation_states_are_never_deleted
BEFORE DELETE ON obligation_states
BEGIN
    SELECT RAISE(ABORT, 'obligation states are never deleted');
END;
