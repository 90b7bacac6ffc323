-- Task cleanups: removing a finished task's worktree, task branch and checkpoint refs is journaled
-- (docs/storage.md, "Cleanup: intent and end").
--
-- task_cleanups holds one row per cleanup started, committed before anything in the repository is removed:
-- the task, whether its branch goes too (delete_branch), and the diff identity of a patch stored for it
-- (its worktree content is saved then). task_cleanup_ends holds how it ended — removed, or kept (with the
-- refusal, a short code such as unsaved-work) — committed with its worktree-removed / worktree-kept event.
-- A cleanup without an end is unfinished: startup recovery runs it again until it ends.
-- Both are facts: they refuse UPDATE and DELETE.

CREATE TABLE task_cleanups (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks (id),
    delete_branch INTEGER NOT NULL CHECK (delete_branch IN (0, 1)),
    saved_patch_identity TEXT CHECK (saved_patch_identity IS NULL OR (length(saved_patch_identity) = 64
                                     AND saved_patch_identity NOT GLOB '*[^0-9a-f]*')),
    started_at_us INTEGER NOT NULL
) STRICT;

CREATE INDEX task_cleanups_by_task ON task_cleanups (task_id, id);

CREATE TABLE task_cleanup_ends (
    cleanup_id INTEGER PRIMARY KEY REFERENCES task_cleanups (id),
    outcome TEXT NOT NULL CHECK (outcome IN ('removed', 'kept')),
    refusal TEXT,
    detail TEXT NOT NULL CHECK (length(detail) BETWEEN 0 AND 2048),
    ended_at_us INTEGER NOT NULL
) STRICT;

CREATE TRIGGER task_cleanups_are_immutable
BEFORE UPDATE ON task_cleanups
BEGIN
    SELECT RAISE(ABORT, 'task cleanups are immutable');
END;

CREATE TRIGGER task_cleanups_are_never_deleted
BEFORE DELETE ON task_cleanups
BEGIN
    SELECT RAISE(ABORT, 'task cleanups are never deleted');
END;

CREATE TRIGGER task_cleanup_ends_are_immutable
BEFORE UPDATE ON task_cleanup_ends
BEGIN
    SELECT RAISE(ABORT, 'task cleanup ends are immutable');
END;

CREATE TRIGGER task_cleanup_ends_are_never_deleted
BEFORE DELETE ON task_cleanup_ends
BEGIN
    SELECT RAISE(ABORT, 'task cleanup ends are never deleted');
END;
