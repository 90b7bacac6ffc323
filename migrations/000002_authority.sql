-- Authority: tasks (minimal), tool requests as bound, immutable authority decisions, identity-bound
-- approvals, capability denials, and tool executions whose intent is committed before they run.
--
-- Fact tables (tool_requests, authority_decisions, denials) refuse UPDATE and DELETE. Approvals change
-- exactly once, when an allow-once approval is consumed. Executions move forward through a guarded
-- state machine (intended -> running -> succeeded | failed | cancelled | outcome-unknown; intended may
-- also end directly) and are immutable once they reach an end state.

-- A task: one outcome the user asked for, run in its own worktree. This is the smallest honest shape;
-- the task service extends it (plans, runs, budgets) with later migrations. Its events go to a
-- thread-kind session `ses_<task id body>` (the foundation's sessions.kind allows only system/thread).
CREATE TABLE tasks (
    id TEXT PRIMARY KEY CHECK (id GLOB 'tsk_?*' AND length(id) BETWEEN 12 AND 68
                               AND substr(id, 5) NOT GLOB '*[^0-9a-z]*'),
    session_id TEXT NOT NULL UNIQUE REFERENCES sessions (id)
        CHECK (session_id = 'ses_' || substr(id, 5)),
    repository_root TEXT NOT NULL CHECK (length(repository_root) BETWEEN 2 AND 4096
                                         AND substr(repository_root, 1, 1) = '/'),
    worktree_path TEXT NOT NULL CHECK (length(worktree_path) BETWEEN 2 AND 4096
                                       AND substr(worktree_path, 1, 1) = '/'),
    base_revision TEXT CHECK (base_revision IS NULL OR (length(base_revision) IN (40, 64)
                                                        AND base_revision NOT GLOB '*[^0-9a-f]*')),
    state TEXT NOT NULL CHECK (state IN (
        'draft', 'forecasting', 'awaiting-plan-approval', 'ready', 'running', 'paused',
        'awaiting-authority', 'validating', 'awaiting-review', 'completed', 'failed', 'cancelled',
        'rolled-back', 'recovery-required')),
    revision INTEGER NOT NULL DEFAULT 0 CHECK (revision >= 0),
    created_at_us INTEGER NOT NULL,
    updated_at_us INTEGER NOT NULL,
    CHECK (updated_at_us >= created_at_us)
) STRICT;

CREATE TRIGGER tasks_keep_their_identity
BEFORE UPDATE ON tasks
WHEN NEW.id IS NOT OLD.id OR NEW.session_id IS NOT OLD.session_id
  OR NEW.repository_root IS NOT OLD.repository_root OR NEW.worktree_path IS NOT OLD.worktree_path
  OR NEW.created_at_us IS NOT OLD.created_at_us
  OR (OLD.base_revision IS NOT NULL AND NEW.base_revision IS NOT OLD.base_revision)
BEGIN
    SELECT RAISE(ABORT, 'a task keeps its id, session, repository, worktree, base and creation time');
END;

CREATE TRIGGER tasks_revision_advances_by_exactly_one
BEFORE UPDATE ON tasks
WHEN NEW.revision <> OLD.revision + 1
BEGIN
    SELECT RAISE(ABORT, 'task revision must advance by exactly one');
END;

CREATE TRIGGER tasks_are_never_deleted
BEFORE DELETE ON tasks
BEGIN
    SELECT RAISE(ABORT, 'tasks are never deleted');
END;

-- A tool request exactly as bound and classified: the canonical operation JSON (from which the
-- identity is the sha256), the capability needs with their reasons, and who asked.
CREATE TABLE tool_requests (
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
    source TEXT NOT NULL CHECK (source IN ('model', 'user', 'test')),
    idempotency_key TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    requested_at_us INTEGER NOT NULL,
    UNIQUE (task_id, idempotency_key),
    CHECK (json_extract(operation_json, '$.task_id') = task_id),
    CHECK (json_extract(operation_json, '$.tool') = tool)
) STRICT;

CREATE INDEX tool_requests_by_task ON tool_requests (task_id, requested_at_us);

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

-- Every authority decision, automatic ones included. A request's first decision is made by the
-- system when it is recorded; a `pending` decision is later resolved (superseded) exactly once, by a
-- person, by the headless policy, or by the system when a denial recorded meanwhile covers it.
-- `approval_id` names the standing allow-for-task approval that covered a request at submission;
-- `denial_id` names the denial that refused it.
CREATE TABLE authority_decisions (
    id TEXT PRIMARY KEY CHECK (id GLOB 'dec_?*' AND length(id) BETWEEN 12 AND 68),
    request_id TEXT NOT NULL REFERENCES tool_requests (id),
    task_id TEXT NOT NULL REFERENCES tasks (id),
    supersedes_decision_id TEXT UNIQUE REFERENCES authority_decisions (id),
    outcome TEXT NOT NULL CHECK (outcome IN (
        'automatic', 'pending', 'allowed-once', 'allowed-for-task', 'denied', 'refused-inactive-task',
        'refused-denied-capability')),
    covered_needs_json TEXT NOT NULL CHECK (json_valid(covered_needs_json)
                                            AND json_type(covered_needs_json) = 'array'),
    decided_by TEXT NOT NULL CHECK (decided_by IN ('system', 'user', 'headless-policy')),
    reason TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 2048),
    approval_id TEXT REFERENCES approvals (id),
    denial_id TEXT REFERENCES denials (id),
    decided_at_us INTEGER NOT NULL,
    CHECK (decided_by = 'system' OR outcome IN ('allowed-once', 'allowed-for-task', 'denied')),
    CHECK (decided_by <> 'system' OR outcome NOT IN ('allowed-once', 'denied')),
    CHECK (decided_by = 'system' OR supersedes_decision_id IS NOT NULL),
    CHECK (outcome NOT IN ('automatic', 'pending', 'refused-inactive-task') OR supersedes_decision_id IS NULL),
    CHECK ((outcome = 'refused-denied-capability') = (denial_id IS NOT NULL)),
    CHECK ((outcome = 'allowed-for-task' AND decided_by = 'system') = (approval_id IS NOT NULL))
) STRICT;

CREATE INDEX authority_decisions_by_request ON authority_decisions (request_id, decided_at_us);
CREATE INDEX authority_decisions_by_task ON authority_decisions (task_id, decided_at_us);

CREATE TRIGGER authority_decisions_follow_their_request
BEFORE INSERT ON authority_decisions
WHEN NEW.task_id IS NOT (SELECT task_id FROM tool_requests WHERE id = NEW.request_id)
  OR (NEW.supersedes_decision_id IS NULL
      AND EXISTS (SELECT 1 FROM authority_decisions WHERE request_id = NEW.request_id))
  OR (NEW.supersedes_decision_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM authority_decisions
                      WHERE id = NEW.supersedes_decision_id AND request_id = NEW.request_id
                        AND outcome = 'pending'))
BEGIN
    SELECT RAISE(ABORT, 'a decision is a request''s first, or resolves its pending decision once');
END;

CREATE TRIGGER authority_decisions_are_immutable
BEFORE UPDATE ON authority_decisions
BEGIN
    SELECT RAISE(ABORT, 'authority decisions are immutable');
END;

CREATE TRIGGER authority_decisions_are_never_deleted
BEFORE DELETE ON authority_decisions
BEGIN
    SELECT RAISE(ABORT, 'authority decisions are never deleted');
END;

-- An approval covers exactly one operation identity in one task. `request_id` is the request a person
-- decided; an allow-once approval is consumed only by executing that request, in the same transaction
-- that records the execution intent.
CREATE TABLE approvals (
    id TEXT PRIMARY KEY CHECK (id GLOB 'apr_?*' AND length(id) BETWEEN 12 AND 68),
    task_id TEXT NOT NULL REFERENCES tasks (id),
    request_id TEXT NOT NULL UNIQUE REFERENCES tool_requests (id),
    decision_id TEXT NOT NULL UNIQUE REFERENCES authority_decisions (id),
    operation_identity TEXT NOT NULL CHECK (length(operation_identity) = 64
                                            AND operation_identity NOT GLOB '*[^0-9a-f]*'),
    scope TEXT NOT NULL CHECK (scope IN ('allow-once', 'allow-for-task')),
    consumed_at_us INTEGER,
    consumed_by_execution_id TEXT REFERENCES tool_executions (id),
    revision INTEGER NOT NULL DEFAULT 0 CHECK (revision IN (0, 1)),
    created_at_us INTEGER NOT NULL,
    CHECK ((consumed_at_us IS NULL) = (consumed_by_execution_id IS NULL)),
    CHECK (consumed_at_us IS NULL OR scope = 'allow-once'),
    CHECK ((revision = 1) = (consumed_at_us IS NOT NULL))
) STRICT;

CREATE INDEX approvals_by_identity ON approvals (task_id, operation_identity);

CREATE TRIGGER approvals_match_their_request
BEFORE INSERT ON approvals
WHEN NOT EXISTS (SELECT 1 FROM tool_requests
                 WHERE id = NEW.request_id AND task_id = NEW.task_id
                   AND operation_identity = NEW.operation_identity)
BEGIN
    SELECT RAISE(ABORT, 'an approval binds its request''s task and exact operation identity');
END;

CREATE TRIGGER approvals_change_only_by_being_consumed_once
BEFORE UPDATE ON approvals
WHEN OLD.scope <> 'allow-once' OR OLD.consumed_at_us IS NOT NULL OR NEW.consumed_at_us IS NULL
  OR NEW.id IS NOT OLD.id OR NEW.task_id IS NOT OLD.task_id OR NEW.request_id IS NOT OLD.request_id
  OR NEW.decision_id IS NOT OLD.decision_id OR NEW.operation_identity IS NOT OLD.operation_identity
  OR NEW.scope IS NOT OLD.scope OR NEW.created_at_us IS NOT OLD.created_at_us
  OR NEW.revision <> OLD.revision + 1
BEGIN
    SELECT RAISE(ABORT, 'an approval changes only when an allow-once approval is consumed, once');
END;

CREATE TRIGGER approvals_are_never_deleted
BEFORE DELETE ON approvals
BEGIN
    SELECT RAISE(ABORT, 'approvals are never deleted');
END;

-- A denial binds (task, capability[, resource]): it refuses every later request with an overlapping
-- need, whatever the tool, wrapper or working directory. NULL resource = every resource.
CREATE TABLE denials (
    id TEXT PRIMARY KEY CHECK (id GLOB 'dny_?*' AND length(id) BETWEEN 12 AND 68),
    task_id TEXT NOT NULL REFERENCES tasks (id),
    capability TEXT NOT NULL CHECK (capability IN (
        'process', 'network', 'install', 'outside-write', 'external-communication', 'credential',
        'destructive', 'privileged')),
    resource TEXT CHECK (resource IS NULL OR (length(resource) BETWEEN 1 AND 255
                                              AND resource NOT GLOB '*[^!-~]*')),
    decision_id TEXT NOT NULL REFERENCES authority_decisions (id),
    reason TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 2048),
    created_at_us INTEGER NOT NULL
) STRICT;

CREATE INDEX denials_by_task ON denials (task_id, capability);

CREATE TRIGGER denials_are_immutable
BEFORE UPDATE ON denials
BEGIN
    SELECT RAISE(ABORT, 'denials are immutable');
END;

CREATE TRIGGER denials_are_never_deleted
BEFORE DELETE ON denials
BEGIN
    SELECT RAISE(ABORT, 'denials are never deleted');
END;

-- One execution per request, at most. The intent row is committed before the worker is asked to run
-- anything; output stored here has already been redacted (exact loaded secrets + patterns) and capped.
CREATE TABLE tool_executions (
    id TEXT PRIMARY KEY CHECK (id GLOB 'exe_?*' AND length(id) BETWEEN 12 AND 68),
    request_id TEXT NOT NULL UNIQUE REFERENCES tool_requests (id),
    task_id TEXT NOT NULL REFERENCES tasks (id),
    decision_id TEXT NOT NULL REFERENCES authority_decisions (id),
    approval_id TEXT REFERENCES approvals (id),
    operation_identity TEXT NOT NULL CHECK (length(operation_identity) = 64
                                            AND operation_identity NOT GLOB '*[^0-9a-f]*'),
    state TEXT NOT NULL CHECK (state IN (
        'intended', 'running', 'succeeded', 'failed', 'cancelled', 'outcome-unknown')),
    failure_kind TEXT CHECK (failure_kind IS NULL OR (length(failure_kind) BETWEEN 1 AND 64
                                                      AND failure_kind NOT GLOB '*[^a-z0-9-]*')),
    message TEXT CHECK (message IS NULL OR length(message) <= 1024),
    exit_code INTEGER,
    content TEXT CHECK (content IS NULL OR length(content) <= 1048576),
    stdout TEXT CHECK (stdout IS NULL OR length(stdout) <= 262144),
    stderr TEXT CHECK (stderr IS NULL OR length(stderr) <= 262144),
    content_truncated INTEGER NOT NULL DEFAULT 0 CHECK (content_truncated IN (0, 1)),
    stdout_truncated INTEGER NOT NULL DEFAULT 0 CHECK (stdout_truncated IN (0, 1)),
    stderr_truncated INTEGER NOT NULL DEFAULT 0 CHECK (stderr_truncated IN (0, 1)),
    content_sha256 TEXT CHECK (content_sha256 IS NULL OR (length(content_sha256) = 64
                                                          AND content_sha256 NOT GLOB '*[^0-9a-f]*')),
    duration_ms INTEGER CHECK (duration_ms IS NULL OR duration_ms >= 0),
    intended_at_us INTEGER NOT NULL,
    started_at_us INTEGER,
    finished_at_us INTEGER,
    CHECK ((state IN ('intended', 'running')) = (finished_at_us IS NULL)),
    CHECK (state <> 'intended' OR started_at_us IS NULL),
    CHECK (state <> 'running' OR started_at_us IS NOT NULL),
    CHECK (state IN ('succeeded', 'failed', 'cancelled', 'outcome-unknown')
           OR (failure_kind IS NULL AND message IS NULL AND exit_code IS NULL AND content IS NULL
               AND stdout IS NULL AND stderr IS NULL AND content_sha256 IS NULL AND duration_ms IS NULL)),
    CHECK (state <> 'succeeded' OR failure_kind IS NULL),
    CHECK (state NOT IN ('failed', 'cancelled', 'outcome-unknown') OR failure_kind IS NOT NULL)
) STRICT;

CREATE INDEX tool_executions_by_task ON tool_executions (task_id, intended_at_us);
CREATE INDEX tool_executions_unfinished ON tool_executions (state) WHERE state IN ('intended', 'running');

CREATE TRIGGER tool_executions_use_their_approval_once
BEFORE INSERT ON tool_executions
WHEN NEW.approval_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM approvals
    WHERE id = NEW.approval_id AND task_id = NEW.task_id AND operation_identity = NEW.operation_identity
      AND (scope = 'allow-for-task' OR (consumed_at_us IS NULL AND request_id = NEW.request_id)))
BEGIN
    SELECT RAISE(ABORT, 'an execution needs an unconsumed approval of its own task and identity');
END;

CREATE TRIGGER tool_executions_match_their_request
BEFORE INSERT ON tool_executions
WHEN NEW.state <> 'intended' OR NOT EXISTS (
    SELECT 1 FROM tool_requests
    WHERE id = NEW.request_id AND task_id = NEW.task_id AND operation_identity = NEW.operation_identity)
BEGIN
    SELECT RAISE(ABORT, 'an execution starts as an intent for its request''s exact operation');
END;

CREATE TRIGGER tool_executions_only_move_forward
BEFORE UPDATE ON tool_executions
WHEN NEW.id IS NOT OLD.id OR NEW.request_id IS NOT OLD.request_id OR NEW.task_id IS NOT OLD.task_id
  OR NEW.decision_id IS NOT OLD.decision_id OR NEW.approval_id IS NOT OLD.approval_id
  OR NEW.operation_identity IS NOT OLD.operation_identity OR NEW.intended_at_us IS NOT OLD.intended_at_us
  OR NOT ((OLD.state = 'intended' AND NEW.state IN ('running', 'succeeded', 'failed', 'cancelled',
                                                    'outcome-unknown'))
          OR (OLD.state = 'running' AND NEW.state IN ('succeeded', 'failed', 'cancelled', 'outcome-unknown')
              AND NEW.started_at_us IS OLD.started_at_us))
BEGIN
    SELECT RAISE(ABORT, 'an execution only moves forward, and is immutable once it ended');
END;

CREATE TRIGGER tool_executions_are_never_deleted
BEFORE DELETE ON tool_executions
BEGIN
    SELECT RAISE(ABORT, 'tool executions are never deleted');
END;
