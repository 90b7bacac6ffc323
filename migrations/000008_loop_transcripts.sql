-- codeflux-migration: rebuilds-tables
--
-- The implementation loop's conversation, kept so that a resumed run continues it, and `pipeline` as the
-- source of a tool request the pipeline itself makes (a check command).
--
-- Conversations: a task's implementation loop talks to the model in one conversation per plan revision
-- until a gate sends the work back (the next attempt starts a new conversation carrying the failure) or
-- the run ends (review, failure). A pause, a signal, a refused model call or a crash ends the *attempt*,
-- not the conversation: the next attempt (a resume, in this process or another) continues it. Messages
-- are stored as the loop sends them to the model, after the redaction pipeline (exact loaded secrets and
-- key patterns) and bounded: no secret reaches this table. With each message go the indexes of the plan
-- steps done so far (a step counts only after a compatible tool succeeded, never because the model said so)
-- and, for an assistant turn, the key its tool calls were submitted under, so a turn interrupted before
-- all its calls were answered is answered from the recorded requests, never run twice.
--
-- Messages are facts (append-only, in order, no UPDATE, no DELETE). A conversation changes once, when it
-- is closed; at most one conversation per task is open.
--
-- The tool_requests rebuild: SQLite changes a CHECK constraint only by rebuilding the table. This file
-- declares the rebuild on its first line, so the migration runner turns foreign keys off around its
-- transaction and runs `PRAGMA foreign_key_check` before committing (SQLite's 12-step procedure); every
-- row is copied unchanged. `legacy_alter_table` is on for the rename only: otherwise the rename re-parses
-- the triggers of other tables that name tool_requests while it does not exist (authority_decisions,
-- approvals, tool_executions), and refuses.

CREATE TABLE tool_requests_rebuilt (
    id TEXT PRIMARY KEY CHECK (id GLOB 'treq_?*' AND length(id) BETWEEN 13 AND 69),
    task_id TEXT NOT NULL REFERENCES tasks (id),
    tool TEXT NOT NULL CHECK (tool IN (
        'read_file', 'list_directory', 'glob', 'grep', 'write_file', 'edit_file', 'apply_patch',
        'delete_file', 'inspect_diff', 'git_status', 'git_log', 'run_command')),
    operation_json TEXT NOT NULL CHECK (json_valid(operation_json)
                                        AND json_type(operation_json) = 'object'
                                        AND length(CAST(operation_json AS BLOB)) <= 4194304),
    operation_identity TEXT NOT NULL CHECK (length(operation_identity) = 64
                                            AND operation_identity NOT GLOB '*[^0-9a-f]*'),
    needs_json TEXT NOT NULL CHECK (json_valid(needs_json) AND json_type(needs_json) = 'array'
                                    AND json_array_length(needs_json) >= 1),
    compound INTEGER NOT NULL CHECK (compound IN (0, 1)),
    source TEXT NOT NULL CHECK (source IN ('model', 'user', 'test', 'pipeline')),
    idempotency_key TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    requested_at_us INTEGER NOT NULL,
    UNIQUE (task_id, idempotency_key),
    CHECK (json_extract(operation_json, '$.task_id') = task_id),
    CHECK (json_extract(operation_json, '$.tool') = tool)
) STRICT;

INSERT INTO tool_requests_rebuilt (id, task_id, tool, operation_json, operation_identity, needs_json, compound,
                                   source, idempotency_key, requested_at_us)
SELECT id, task_id, tool, operation_json, operation_identity, needs_json, compound, source, idempotency_key,
       requested_at_us
FROM tool_requests;

DROP TABLE tool_requests;

PRAGMA legacy_alter_table = ON;
ALTER TABLE tool_requests_rebuilt RENAME TO tool_requests;
PRAGMA legacy_alter_table = OFF;

-- The table's own triggers went with the old table; they are the same as in 000002.
CREATE TRIGGER tool_requests_are_immutable
BEFORE UPDATE ON tool_requests
BEGIN
    SELECT RAISE(ABORT, 'tool requests are immutable');
END;

CREATE TRIGGER tool_requests_are_never_deleted
BEFORE DELETE ON tool_requests
BEGIN
    SELECT RAISE(ABORT, 'tool requests are never deleted');
END;

-- One conversation of a task's implementation loop, bound to the approved plan revision (and its hash)
-- it carries out and to the attempt that opened it.
CREATE TABLE loop_conversations (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    plan_revision INTEGER NOT NULL,
    plan_sha256 TEXT NOT NULL,
    opened_in_attempt INTEGER NOT NULL,
    opened_at_us INTEGER NOT NULL,
    closed_at_us INTEGER,
    closed_reason TEXT CHECK (closed_reason IS NULL OR length(closed_reason) BETWEEN 1 AND 2048),
    FOREIGN KEY (task_id, plan_revision, plan_sha256) REFERENCES plan_revisions (task_id, revision, sha256),
    FOREIGN KEY (task_id, opened_in_attempt) REFERENCES task_runs (task_id, attempt),
    CHECK ((closed_at_us IS NULL) = (closed_reason IS NULL))
) STRICT;

CREATE INDEX loop_conversations_by_task ON loop_conversations (task_id, id);
CREATE UNIQUE INDEX loop_conversations_one_open_per_task ON loop_conversations (task_id) WHERE closed_at_us IS NULL;

CREATE TRIGGER loop_conversations_open_in_a_running_attempt
BEFORE INSERT ON loop_conversations
WHEN NEW.closed_at_us IS NOT NULL
  OR NOT EXISTS (SELECT 1 FROM task_runs
                 WHERE task_id = NEW.task_id AND attempt = NEW.opened_in_attempt AND ended_at_us IS NULL
                   AND plan_revision = NEW.plan_revision AND plan_sha256 = NEW.plan_sha256)
BEGIN
    SELECT RAISE(ABORT, 'a conversation opens in an open attempt of its task, under that attempt''s plan');
END;

CREATE TRIGGER loop_conversations_close_once
BEFORE UPDATE ON loop_conversations
WHEN OLD.closed_at_us IS NOT NULL OR NEW.closed_at_us IS NULL
  OR NEW.id IS NOT OLD.id OR NEW.task_id IS NOT OLD.task_id OR NEW.plan_revision IS NOT OLD.plan_revision
  OR NEW.plan_sha256 IS NOT OLD.plan_sha256 OR NEW.opened_in_attempt IS NOT OLD.opened_in_attempt
  OR NEW.opened_at_us IS NOT OLD.opened_at_us
BEGIN
    SELECT RAISE(ABORT, 'a conversation changes only when it is closed, once');
END;

CREATE TRIGGER loop_conversations_are_never_deleted
BEFORE DELETE ON loop_conversations
BEGIN
    SELECT RAISE(ABORT, 'conversations are never deleted');
END;

-- One message of a conversation, redacted and bounded: the parts as JSON (text, reasoning, tool calls,
-- tool results), the attempt that recorded it, the plan steps done after it, and — for an assistant
-- turn — the idempotency key prefix its tool calls were submitted under.
CREATE TABLE loop_messages (
    conversation_id INTEGER NOT NULL REFERENCES loop_conversations (id),
    sequence INTEGER NOT NULL CHECK (sequence BETWEEN 1 AND 2048),
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    turn_key TEXT CHECK (turn_key IS NULL OR length(turn_key) BETWEEN 1 AND 200),
    parts_json TEXT NOT NULL CHECK (json_valid(parts_json) AND json_type(parts_json) = 'array'
                                    AND json_array_length(parts_json) >= 1
                                    AND length(CAST(parts_json AS BLOB)) <= 4194304),
    steps_done_json TEXT NOT NULL CHECK (json_valid(steps_done_json) AND json_type(steps_done_json) = 'array'
                                         AND length(steps_done_json) <= 65536),
    redacted INTEGER NOT NULL CHECK (redacted IN (0, 1)),
    recorded_at_us INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, sequence),
    FOREIGN KEY (task_id, attempt) REFERENCES task_runs (task_id, attempt),
    CHECK ((role = 'assistant') = (turn_key IS NOT NULL))
) STRICT;

CREATE TRIGGER loop_messages_append_to_an_open_conversation_in_order
BEFORE INSERT ON loop_messages
WHEN NOT EXISTS (SELECT 1 FROM loop_conversations
                 WHERE id = NEW.conversation_id AND task_id = NEW.task_id AND closed_at_us IS NULL)
  OR NOT EXISTS (SELECT 1 FROM task_runs
                 WHERE task_id = NEW.task_id AND attempt = NEW.attempt AND ended_at_us IS NULL)
  OR NEW.sequence IS NOT (SELECT count(*) + 1 FROM loop_messages WHERE conversation_id = NEW.conversation_id)
BEGIN
    SELECT RAISE(ABORT, 'messages append in order to an open conversation of their task, while an attempt runs');
END;

CREATE TRIGGER loop_messages_are_immutable
BEFORE UPDATE ON loop_messages
BEGIN
    SELECT RAISE(ABORT, 'conversation messages are immutable');
END;

CREATE TRIGGER loop_messages_are_never_deleted
BEFORE DELETE ON loop_messages
BEGIN
    SELECT RAISE(ABORT, 'conversation messages are never deleted');
END;
