-- Accept landings: the intent of an accept, recorded before the user's checkout or .git is touched, and how
-- each one ended (docs/storage.md, "Accept: intent, landing, recovery").
--
-- accept_landings holds one row per landing started: the branch, its previous and landed commits and trees,
-- every planned path with its old and new blob id and mode (paths_json), the lock files the landing creates
-- (locks_json) and the token naming its temporary files. accept_landing_ends holds how it ended: landed
-- (the branch moved), rolled-back (the checkout is as before) — by the accept itself, its retry, or startup
-- recovery. A landing without an end row is unfinished: a retry or startup recovery resolves it first.
-- Both are facts: they refuse UPDATE and DELETE.

CREATE TABLE accept_landings (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    diff_identity TEXT NOT NULL CHECK (length(diff_identity) = 64 AND diff_identity NOT GLOB '*[^0-9a-f]*'),
    mode TEXT NOT NULL CHECK (mode IN ('fast-forward', 'merge-commit')),
    work_tree TEXT NOT NULL,
    git_dir TEXT NOT NULL,
    common_dir TEXT NOT NULL,
    branch_ref TEXT NOT NULL CHECK (branch_ref GLOB 'refs/heads/?*'),
    previous_head TEXT NOT NULL CHECK (length(previous_head) IN (40, 64) AND previous_head NOT GLOB '*[^0-9a-f]*'),
    previous_tree TEXT NOT NULL CHECK (length(previous_tree) IN (40, 64) AND previous_tree NOT GLOB '*[^0-9a-f]*'),
    landed_head TEXT NOT NULL CHECK (length(landed_head) IN (40, 64) AND landed_head NOT GLOB '*[^0-9a-f]*'),
    landed_tree TEXT NOT NULL CHECK (length(landed_tree) IN (40, 64) AND landed_tree NOT GLOB '*[^0-9a-f]*'),
    task_commit TEXT NOT NULL CHECK (length(task_commit) IN (40, 64) AND task_commit NOT GLOB '*[^0-9a-f]*'),
    task_branch_ref TEXT,
    paths_json TEXT NOT NULL CHECK (json_valid(paths_json)),
    locks_json TEXT NOT NULL CHECK (json_valid(locks_json)),
    token TEXT NOT NULL UNIQUE CHECK (length(token) BETWEEN 1 AND 64),
    started_at_us INTEGER NOT NULL
) STRICT;

CREATE INDEX accept_landings_by_task ON accept_landings (task_id, id);

CREATE TABLE accept_landing_ends (
    landing_id INTEGER PRIMARY KEY REFERENCES accept_landings (id),
    outcome TEXT NOT NULL CHECK (outcome IN ('landed', 'rolled-back')),
    ended_by TEXT NOT NULL CHECK (ended_by IN ('accept', 'retry', 'recovery')),
    detail TEXT NOT NULL CHECK (length(detail) BETWEEN 0 AND 2048),
    ended_at_us INTEGER NOT NULL
) STRICT;

CREATE TRIGGER accept_landings_are_immutable
BEFORE UPDATE ON accept_landings
BEGIN
    SELECT RAISE(ABORT, 'accept landings are immutable');
END;

CREATE TRIGGER accept_landings_are_never_deleted
BEFORE DELETE ON accept_landings
BEGIN
    SELECT RAISE(ABORT, 'accept landings are never deleted');
END;

CREATE TRIGGER accept_landing_ends_are_immutable
BEFORE UPDATE ON accept_landing_ends
BEGIN
    SELECT RAISE(ABORT, 'accept landing ends are immutable');
END;

CREATE TRIGGER accept_landing_ends_are_never_deleted
BEFORE DELETE ON accept_landing_ends
BEGIN
    SELECT RAISE(ABORT, 'accept landing ends are never deleted');
END;
