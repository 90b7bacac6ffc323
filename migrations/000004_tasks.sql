-- Tasks end to end: repositories, the requirement on each task, dirty-tree acknowledgements, immutable
-- hashed plan revisions and the decision on each, task transitions, run attempts with their stage
-- ledger, and stored patches.
--
-- A task is *active* while it is running, awaiting-authority or validating: it holds a run slot. At most
-- 4 tasks are active at once and at most 1 per repository; the task service checks both inside the
-- transaction that makes a task active (to name the holders), and the schema refuses a fifth active task
-- (trigger) or a second active task in one repository (partial unique index) whatever the code path.
--
-- Fact tables (repositories, acknowledgements, plan revisions, plan decisions, transitions, ledger rows,
-- patches) refuse UPDATE and DELETE. A run attempt changes once, when it ends with a complete ledger.

-- A repository the user opened, by its stable identity: sha256 over its location and first commits (see
-- codeflux.gitwork.repository). A repository that moved or whose history was replaced is a new row.
CREATE TABLE repositories (
    id TEXT PRIMARY KEY CHECK (id GLOB 'rep_?*' AND length(id) BETWEEN 12 AND 68
                               AND substr(id, 5) NOT GLOB '*[^0-9a-z]*'),
    root_path TEXT NOT NULL CHECK (length(root_path) BETWEEN 2 AND 4096 AND substr(root_path, 1, 1) = '/'),
    identity TEXT NOT NULL UNIQUE CHECK (length(identity) = 64 AND identity NOT GLOB '*[^0-9a-f]*'),
    root_commits_json TEXT NOT NULL CHECK (json_valid(root_commits_json)
                                           AND json_type(root_commits_json) = 'array'
                                           AND json_array_length(root_commits_json) BETWEEN 1 AND 64),
    first_seen_at_us INTEGER NOT NULL
) STRICT;

CREATE TRIGGER repositories_are_immutable
BEFORE UPDATE ON repositories
BEGIN
    SELECT RAISE(ABORT, 'repositories are immutable; a changed identity is a new repository');
END;

CREATE TRIGGER repositories_are_never_deleted
BEFORE DELETE ON repositories
BEGIN
    SELECT RAISE(ABORT, 'repositories are never deleted');
END;

-- The requirement side of a task. NULL on tasks created before this migration (and on the minimal tasks
-- other services create for themselves); the task service always sets all three. Set at creation only.
ALTER TABLE tasks ADD COLUMN repository_id TEXT REFERENCES repositories (id);
ALTER TABLE tasks ADD COLUMN title TEXT CHECK (title IS NULL OR length(title) BETWEEN 1 AND 200);
ALTER TABLE tasks ADD COLUMN requirement TEXT CHECK (requirement IS NULL OR length(requirement) BETWEEN 1 AND 65536);

CREATE INDEX tasks_by_repository ON tasks (repository_id, state);
CREATE INDEX tasks_by_state ON tasks (state);

CREATE TRIGGER tasks_keep_their_requirement
BEFORE UPDATE ON tasks
WHEN NEW.repository_id IS NOT OLD.repository_id OR NEW.title IS NOT OLD.title
  OR NEW.requirement IS NOT OLD.requirement
BEGIN
    SELECT RAISE(ABORT, 'a task keeps its repository, title and requirement');
END;

CREATE TRIGGER tasks_live_in_their_repository
BEFORE INSERT ON tasks
WHEN NEW.repository_id IS NOT NULL
 AND (NEW.requirement IS NULL OR NEW.title IS NULL
      OR NEW.repository_root IS NOT (SELECT root_path FROM repositories WHERE id = NEW.repository_id))
BEGIN
    SELECT RAISE(ABORT, 'a task of a repository has a title, a requirement and that repository''s root');
END;

-- At most one active task per repository (tasks without a repository row are not counted here).
CREATE UNIQUE INDEX tasks_one_active_per_repository ON tasks (repository_id)
WHERE repository_id IS NOT NULL AND state IN ('running', 'awaiting-authority', 'validating');

-- At most four active tasks in all.
CREATE TRIGGER tasks_at_most_four_active_on_insert
BEFORE INSERT ON tasks
WHEN NEW.state IN ('running', 'awaiting-authority', 'validating')
 AND (SELECT count(*) FROM tasks WHERE state IN ('running', 'awaiting-authority', 'validating')) >= 4
BEGIN
    SELECT RAISE(ABORT, 'at most 4 tasks may be active at once');
END;

CREATE TRIGGER tasks_at_most_four_active_on_update
BEFORE UPDATE OF state ON tasks
WHEN NEW.state IN ('running', 'awaiting-authority', 'validating')
 AND OLD.state NOT IN ('running', 'awaiting-authority', 'validating')
 AND (SELECT count(*) FROM tasks WHERE state IN ('running', 'awaiting-authority', 'validating')) >= 4
BEGIN
    SELECT RAISE(ABORT, 'at most 4 tasks may be active at once');
END;

-- The user acknowledged exactly this list of uncommitted changes (bound by its hash) for this task. The
-- newest acknowledgement of a task is the one in force; it is void once the tree's hash differs.
CREATE TABLE dirty_acknowledgements (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    repository_id TEXT NOT NULL REFERENCES repositories (id),
    dirty_hash TEXT NOT NULL CHECK (length(dirty_hash) = 64 AND dirty_hash NOT GLOB '*[^0-9a-f]*'),
    changes_json TEXT NOT NULL CHECK (json_valid(changes_json) AND json_type(changes_json) = 'array'
                                      AND json_array_length(changes_json) >= 1
                                      AND length(CAST(changes_json AS BLOB)) <= 4194304),
    acknowledged_by TEXT NOT NULL CHECK (acknowledged_by IN ('user', 'headless-policy')),
    acknowledged_at_us INTEGER NOT NULL
) STRICT;

CREATE INDEX dirty_acknowledgements_by_task ON dirty_acknowledgements (task_id, id);

CREATE TRIGGER dirty_acknowledgements_match_their_task
BEFORE INSERT ON dirty_acknowledgements
WHEN NEW.repository_id IS NOT (SELECT repository_id FROM tasks WHERE id = NEW.task_id)
BEGIN
    SELECT RAISE(ABORT, 'an acknowledgement belongs to its task''s repository');
END;

CREATE TRIGGER dirty_acknowledgements_are_immutable
BEFORE UPDATE ON dirty_acknowledgements
BEGIN
    SELECT RAISE(ABORT, 'dirty-tree acknowledgements are immutable');
END;

CREATE TRIGGER dirty_acknowledgements_are_never_deleted
BEFORE DELETE ON dirty_acknowledgements
BEGIN
    SELECT RAISE(ABORT, 'dirty-tree acknowledgements are never deleted');
END;

-- One immutable revision of a task's plan: the canonical plan JSON (forecast range included) and the
-- sha256 of its UTF-8 bytes, who wrote it and the feedback that led to it. Revisions count up from 1.
CREATE TABLE plan_revisions (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    revision INTEGER NOT NULL CHECK (revision >= 1),
    plan_json TEXT NOT NULL CHECK (json_valid(plan_json) AND json_type(plan_json) = 'object'
                                   AND json_extract(plan_json, '$.schema') = 'codeflux-plan-v1'
                                   AND length(CAST(plan_json AS BLOB)) <= 262144),
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    created_by TEXT NOT NULL CHECK (created_by IN ('model', 'user', 'scripted')),
    feedback TEXT CHECK (feedback IS NULL OR length(feedback) BETWEEN 1 AND 8192),
    forecast_json TEXT GENERATED ALWAYS AS (json_extract(plan_json, '$.forecast')) VIRTUAL,
    created_at_us INTEGER NOT NULL,
    PRIMARY KEY (task_id, revision),
    UNIQUE (task_id, revision, sha256)
) STRICT;

CREATE TRIGGER plan_revisions_count_up
BEFORE INSERT ON plan_revisions
WHEN NEW.revision IS NOT (SELECT coalesce(max(revision), 0) + 1 FROM plan_revisions WHERE task_id = NEW.task_id)
BEGIN
    SELECT RAISE(ABORT, 'a plan revision is the next number for its task');
END;

CREATE TRIGGER plan_revisions_are_immutable
BEFORE UPDATE ON plan_revisions
BEGIN
    SELECT RAISE(ABORT, 'plan revisions are immutable; record a new revision');
END;

CREATE TRIGGER plan_revisions_are_never_deleted
BEFORE DELETE ON plan_revisions
BEGIN
    SELECT RAISE(ABORT, 'plan revisions are never deleted');
END;

-- The one decision on a plan revision: approved, or sent back with feedback. It names the revision *and*
-- its hash, and only the task's newest revision can be decided: a newer revision needs its own decision.
CREATE TABLE plan_decisions (
    task_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('approved', 'sent-back')),
    feedback TEXT CHECK (feedback IS NULL OR length(feedback) BETWEEN 1 AND 8192),
    decided_by TEXT NOT NULL CHECK (decided_by IN ('user', 'headless-policy')),
    decided_at_us INTEGER NOT NULL,
    PRIMARY KEY (task_id, revision),
    FOREIGN KEY (task_id, revision, sha256) REFERENCES plan_revisions (task_id, revision, sha256),
    CHECK ((decision = 'sent-back') = (feedback IS NOT NULL))
) STRICT;

CREATE TRIGGER plan_decisions_bind_the_newest_revision
BEFORE INSERT ON plan_decisions
WHEN NEW.revision IS NOT (SELECT max(revision) FROM plan_revisions WHERE task_id = NEW.task_id)
BEGIN
    SELECT RAISE(ABORT, 'only the newest plan revision can be decided');
END;

CREATE TRIGGER plan_decisions_are_immutable
BEFORE UPDATE ON plan_decisions
BEGIN
    SELECT RAISE(ABORT, 'plan decisions are immutable');
END;

CREATE TRIGGER plan_decisions_are_never_deleted
BEFORE DELETE ON plan_decisions
BEGIN
    SELECT RAISE(ABORT, 'plan decisions are never deleted');
END;

-- Every task state change, written in the transaction that made it, next to its journal event
-- (`task-state-changed` at event_sequence in the task's session). `task_revision` is the revision the
-- change produced, so a row can only be written right after the change itself.
CREATE TABLE task_transitions (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    task_revision INTEGER NOT NULL CHECK (task_revision >= 1),
    from_state TEXT NOT NULL,
    to_state TEXT NOT NULL,
    reason TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 2048),
    actor TEXT NOT NULL CHECK (actor IN ('user', 'headless-policy', 'system')),
    event_session_id TEXT NOT NULL,
    event_sequence INTEGER NOT NULL,
    at_us INTEGER NOT NULL,
    UNIQUE (task_id, task_revision),
    FOREIGN KEY (event_session_id, event_sequence) REFERENCES events (session_id, sequence),
    CHECK (from_state <> to_state)
) STRICT;

CREATE TRIGGER task_transitions_follow_their_task
BEFORE INSERT ON task_transitions
WHEN NOT EXISTS (SELECT 1 FROM tasks WHERE id = NEW.task_id AND state = NEW.to_state
                                       AND revision = NEW.task_revision AND session_id = NEW.event_session_id)
BEGIN
    SELECT RAISE(ABORT, 'a transition row records its task''s current state, revision and session');
END;

CREATE TRIGGER task_transitions_are_immutable
BEFORE UPDATE ON task_transitions
BEGIN
    SELECT RAISE(ABORT, 'task transitions are immutable');
END;

CREATE TRIGGER task_transitions_are_never_deleted
BEFORE DELETE ON task_transitions
BEGIN
    SELECT RAISE(ABORT, 'task transitions are never deleted');
END;

-- One attempt of a task's run through the pipeline, under an approved plan revision. A run's first
-- attempt opens when it starts; a gate that sends work back ends an attempt and the next one opens.
-- At most one attempt per task is open; an attempt ends once, with its ledger complete (37 rows).
CREATE TABLE task_runs (
    id TEXT PRIMARY KEY CHECK (id GLOB 'run_?*' AND length(id) BETWEEN 12 AND 68
                               AND substr(id, 5) NOT GLOB '*[^0-9a-z]*'),
    task_id TEXT NOT NULL REFERENCES tasks (id),
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    plan_revision INTEGER NOT NULL,
    plan_sha256 TEXT NOT NULL,
    started_at_us INTEGER NOT NULL,
    ended_at_us INTEGER,
    stopped_at_stage TEXT,
    UNIQUE (task_id, attempt),
    FOREIGN KEY (task_id, plan_revision, plan_sha256) REFERENCES plan_revisions (task_id, revision, sha256),
    CHECK (ended_at_us IS NOT NULL OR stopped_at_stage IS NULL)
) STRICT;

CREATE UNIQUE INDEX task_runs_one_open_attempt_per_task ON task_runs (task_id) WHERE ended_at_us IS NULL;

CREATE TRIGGER task_runs_need_an_approved_plan
BEFORE INSERT ON task_runs
WHEN NEW.ended_at_us IS NOT NULL
  OR NEW.attempt IS NOT (SELECT coalesce(max(attempt), 0) + 1 FROM task_runs WHERE task_id = NEW.task_id)
  OR NOT EXISTS (SELECT 1 FROM plan_decisions
                 WHERE task_id = NEW.task_id AND revision = NEW.plan_revision AND sha256 = NEW.plan_sha256
                   AND decision = 'approved')
BEGIN
    SELECT RAISE(ABORT, 'a run attempt opens as the next attempt under an approved plan revision');
END;

CREATE TRIGGER task_runs_end_once_with_a_complete_ledger
BEFORE UPDATE ON task_runs
WHEN OLD.ended_at_us IS NOT NULL OR NEW.ended_at_us IS NULL
  OR NEW.id IS NOT OLD.id OR NEW.task_id IS NOT OLD.task_id OR NEW.attempt IS NOT OLD.attempt
  OR NEW.plan_revision IS NOT OLD.plan_revision OR NEW.plan_sha256 IS NOT OLD.plan_sha256
  OR NEW.started_at_us IS NOT OLD.started_at_us
  OR (SELECT count(*) FROM stage_ledger WHERE task_id = NEW.task_id AND attempt = NEW.attempt) <> 37
BEGIN
    SELECT RAISE(ABORT, 'a run attempt ends once, with a verdict for every stage');
END;

CREATE TRIGGER task_runs_are_never_deleted
BEFORE DELETE ON task_runs
BEGIN
    SELECT RAISE(ABORT, 'run attempts are never deleted');
END;

-- The stage ledger: one immutable row per (task, attempt, stage). The stage NAME is the identity; the
-- number only orders, and must be the catalog's number for that name. Rows are written in stage order
-- without gaps, only while the attempt is open. Exactly five outcomes; satisfied and failed carry their
-- gate evaluation; skipped, blocked and not-implemented carry a reason; blocked and not-implemented did
-- not run, so they have neither an evaluation nor evidence.
CREATE TABLE stage_ledger (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    stage_number INTEGER NOT NULL CHECK (stage_number BETWEEN 1 AND 37),
    stage TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('satisfied', 'failed', 'skipped', 'blocked', 'not-implemented')),
    gate_evaluation TEXT CHECK (gate_evaluation IS NULL OR length(gate_evaluation) BETWEEN 1 AND 8192),
    reason TEXT CHECK (reason IS NULL OR length(reason) BETWEEN 1 AND 2048),
    evidence_json TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(evidence_json)
                                                    AND json_type(evidence_json) = 'object'
                                                    AND length(CAST(evidence_json AS BLOB)) <= 1048576),
    recorded_at_us INTEGER NOT NULL,
    UNIQUE (task_id, attempt, stage),
    UNIQUE (task_id, attempt, stage_number),
    FOREIGN KEY (task_id, attempt) REFERENCES task_runs (task_id, attempt),
    CHECK (stage_number IS CASE stage
            WHEN 'instructions' THEN 1 WHEN 'clarification' THEN 2 WHEN 'atomic-instructions' THEN 3
            WHEN 'decomposition-coverage' THEN 4 WHEN 'contracts' THEN 5 WHEN 'recall' THEN 6
            WHEN 'atom-case-synthesis' THEN 7 WHEN 'atom-example-tests' THEN 8 WHEN 'atom-property-tests' THEN 9
            WHEN 'atoms' THEN 10 WHEN 'atom-verification' THEN 11 WHEN 'atom-fuzz' THEN 12
            WHEN 'atom-mutation' THEN 13 WHEN 'anti-patterns' THEN 14 WHEN 'atom-optimization' THEN 15
            WHEN 'atom-complexity' THEN 16 WHEN 'atom-documentation' THEN 17 WHEN 'composition-obligations' THEN 18
            WHEN 'molecule-tests' THEN 19 WHEN 'molecules' THEN 20 WHEN 'molecule-verification' THEN 21
            WHEN 'control-obligations' THEN 22 WHEN 'control-tests' THEN 23 WHEN 'control-flow' THEN 24
            WHEN 'path-coverage' THEN 25 WHEN 'assembly' THEN 26 WHEN 'program' THEN 27
            WHEN 'integration-tests' THEN 28 WHEN 'end-to-end-tests' THEN 29 WHEN 'global-invariants' THEN 30
            WHEN 'adversarial' THEN 31 WHEN 'repetition' THEN 32 WHEN 'platform-matrix' THEN 33
            WHEN 'non-functional' THEN 34 WHEN 'evidence-bundle' THEN 35 WHEN 'human-acceptance' THEN 36
            WHEN 'deliver' THEN 37 END),
    CHECK (outcome NOT IN ('satisfied', 'failed') OR gate_evaluation IS NOT NULL),
    CHECK (outcome NOT IN ('skipped', 'blocked', 'not-implemented') OR reason IS NOT NULL),
    CHECK (outcome NOT IN ('blocked', 'not-implemented') OR (gate_evaluation IS NULL AND evidence_json = '{}'))
) STRICT;

CREATE TRIGGER stage_ledger_fills_an_open_attempt_in_order
BEFORE INSERT ON stage_ledger
WHEN NOT EXISTS (SELECT 1 FROM task_runs
                 WHERE task_id = NEW.task_id AND attempt = NEW.attempt AND ended_at_us IS NULL)
  OR NEW.stage_number IS NOT (SELECT count(*) + 1 FROM stage_ledger
                              WHERE task_id = NEW.task_id AND attempt = NEW.attempt)
BEGIN
    SELECT RAISE(ABORT, 'ledger rows fill an open attempt in stage order, without gaps');
END;

CREATE TRIGGER stage_ledger_is_immutable
BEFORE UPDATE ON stage_ledger
BEGIN
    SELECT RAISE(ABORT, 'stage ledger rows are immutable');
END;

CREATE TRIGGER stage_ledger_is_never_deleted
BEFORE DELETE ON stage_ledger
BEGIN
    SELECT RAISE(ABORT, 'stage ledger rows are never deleted');
END;

-- A patch kept in the database: the diff a person rejected, or work preserved before a worktree goes
-- (failure, recovery). The exact diff bytes, their sha256, the diff identity and the commits it spans.
CREATE TABLE task_patches (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    kind TEXT NOT NULL CHECK (kind IN ('rejected', 'preserved')),
    diff_identity TEXT NOT NULL CHECK (length(diff_identity) = 64 AND diff_identity NOT GLOB '*[^0-9a-f]*'),
    base_commit TEXT NOT NULL CHECK (length(base_commit) IN (40, 64) AND base_commit NOT GLOB '*[^0-9a-f]*'),
    head_commit TEXT NOT NULL CHECK (length(head_commit) IN (40, 64) AND head_commit NOT GLOB '*[^0-9a-f]*'),
    patch BLOB NOT NULL CHECK (length(patch) <= 67108864),
    patch_sha256 TEXT NOT NULL CHECK (length(patch_sha256) = 64 AND patch_sha256 NOT GLOB '*[^0-9a-f]*'),
    reason TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 2048),
    recorded_at_us INTEGER NOT NULL,
    UNIQUE (task_id, kind, diff_identity)
) STRICT;

CREATE TRIGGER task_patches_are_immutable
BEFORE UPDATE ON task_patches
BEGIN
    SELECT RAISE(ABORT, 'stored patches are immutable');
END;

CREATE TRIGGER task_patches_are_never_deleted
BEFORE DELETE ON task_patches
BEGIN
    SELECT RAISE(ABORT, 'stored patches are never deleted');
END;
