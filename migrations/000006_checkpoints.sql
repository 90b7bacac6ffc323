-- Checkpoints of a task's worktree, and the person's delivery decision on a finished attempt.
--
-- A checkpoint preserves what the task worktree held at one moment as a commit on a private ref
-- (refs/codeflux/checkpoints/<task>/<sequence>; the task branch never moves, no hook runs) and records
-- it here together with its journal event, in one transaction. Sequences count up from 1 per task.
-- Checkpoints are facts: they refuse UPDATE and DELETE.
--
-- Delivery: a run that goes through stops its attempt at human-acceptance (the attempt is finished,
-- its ledger complete and immutable, with stages 36 and 37 `blocked` while nobody has decided). The
-- person's later decision is recorded here, once per attempt, against exactly that finished attempt:
-- accept -> human-acceptance satisfied and deliver satisfied with the landed commit as evidence;
-- reject -> human-acceptance failed with the reason and deliver blocked. The ledger rows are never
-- rewritten; a reader takes 36/37 from this table when a row exists for the attempt.

CREATE TABLE checkpoints (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    trigger_kind TEXT NOT NULL CHECK (trigger_kind IN ('plan-approved', 'material-edit', 'before-risky-action', 'paused',
                                             'shutdown')),
    commit_id TEXT NOT NULL CHECK (length(commit_id) IN (40, 64) AND commit_id NOT GLOB '*[^0-9a-f]*'),
    ref_name TEXT NOT NULL,
    head_commit TEXT NOT NULL CHECK (length(head_commit) IN (40, 64) AND head_commit NOT GLOB '*[^0-9a-f]*'),
    diff_identity TEXT NOT NULL CHECK (length(diff_identity) = 64 AND diff_identity NOT GLOB '*[^0-9a-f]*'),
    plan_revision INTEGER CHECK (plan_revision IS NULL OR plan_revision >= 1),
    attempt INTEGER CHECK (attempt IS NULL OR attempt >= 1),
    event_sequence INTEGER NOT NULL CHECK (event_sequence >= 1),
    created_at_us INTEGER NOT NULL,
    UNIQUE (task_id, sequence),
    UNIQUE (ref_name),
    CHECK (ref_name = 'refs/codeflux/checkpoints/' || task_id || '/' || sequence)
) STRICT;

CREATE TRIGGER checkpoints_count_up
BEFORE INSERT ON checkpoints
WHEN NEW.sequence IS NOT (SELECT coalesce(max(sequence), 0) + 1 FROM checkpoints WHERE task_id = NEW.task_id)
BEGIN
    SELECT RAISE(ABORT, 'checkpoint sequences count up from 1 per task without gaps');
END;

CREATE TRIGGER checkpoints_are_immutable
BEFORE UPDATE ON checkpoints
BEGIN
    SELECT RAISE(ABORT, 'checkpoints are immutable');
END;

CREATE TRIGGER checkpoints_are_never_deleted
BEFORE DELETE ON checkpoints
BEGIN
    SELECT RAISE(ABORT, 'checkpoints are never deleted');
END;

CREATE TABLE task_deliveries (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('accepted', 'rejected')),
    diff_identity TEXT NOT NULL CHECK (length(diff_identity) = 64 AND diff_identity NOT GLOB '*[^0-9a-f]*'),
    human_acceptance TEXT NOT NULL CHECK (human_acceptance IN ('satisfied', 'failed')),
    human_acceptance_evaluation TEXT NOT NULL CHECK (length(human_acceptance_evaluation) BETWEEN 1 AND 8192),
    deliver TEXT NOT NULL CHECK (deliver IN ('satisfied', 'failed', 'blocked')),
    deliver_evaluation TEXT CHECK (deliver_evaluation IS NULL OR length(deliver_evaluation) BETWEEN 1 AND 8192),
    landed_commit TEXT CHECK (landed_commit IS NULL
                              OR (length(landed_commit) IN (40, 64) AND landed_commit NOT GLOB '*[^0-9a-f]*')),
    reason TEXT CHECK (reason IS NULL OR length(reason) BETWEEN 1 AND 2048),
    decided_by TEXT NOT NULL CHECK (length(decided_by) BETWEEN 1 AND 64),
    decided_at_us INTEGER NOT NULL,
    UNIQUE (task_id, attempt),
    FOREIGN KEY (task_id, attempt) REFERENCES task_runs (task_id, attempt),
    CHECK ((decision = 'accepted') = (landed_commit IS NOT NULL)),
    CHECK (decision = 'accepted' OR (human_acceptance = 'failed' AND deliver = 'blocked' AND reason IS NOT NULL)),
    CHECK ((deliver = 'satisfied') <= (landed_commit IS NOT NULL)),
    CHECK ((deliver = 'blocked') = (deliver_evaluation IS NULL))
) STRICT;

CREATE TRIGGER task_deliveries_decide_an_attempt_waiting_for_review
BEFORE INSERT ON task_deliveries
WHEN NOT EXISTS (SELECT 1 FROM task_runs
                 WHERE task_id = NEW.task_id AND attempt = NEW.attempt AND ended_at_us IS NOT NULL
                   AND stopped_at_stage = 'human-acceptance')
BEGIN
    SELECT RAISE(ABORT, 'a delivery decides a finished attempt that stopped at human-acceptance');
END;

CREATE TRIGGER task_deliveries_are_immutable
BEFORE UPDATE ON task_deliveries
BEGIN
    SELECT RAISE(ABORT, 'task deliveries are immutable');
END;

CREATE TRIGGER task_deliveries_are_never_deleted
BEFORE DELETE ON task_deliveries
BEGIN
    SELECT RAISE(ABORT, 'task deliveries are never deleted');
END;
