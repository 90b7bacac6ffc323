-- Instruction files a person approved (docs/security.md, "Repository instruction files").
--
-- instruction_approvals holds one row per approval a person gave: the repository (by id), the file's path
-- inside it (repository-relative, '/'-separated) and the sha256 of the exact bytes they read, with who and
-- when. A file whose bytes change has another sha256, so it needs a new approval. instruction_revocations
-- holds at most one revocation per approval, with who and when; approving the same (repository, path,
-- sha256) again after a revocation adds a new approval row. An approval is in force while it has no
-- revocation. Both are facts: they refuse UPDATE and DELETE.

CREATE TABLE instruction_approvals (
    id INTEGER PRIMARY KEY,
    repository_id TEXT NOT NULL REFERENCES repositories (id),
    path TEXT NOT NULL CHECK (length(path) BETWEEN 1 AND 1024 AND substr(path, 1, 1) <> '/'
                              AND path NOT GLOB '*\*' AND instr(path, char(0)) = 0),
    sha256 TEXT NOT NULL CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    approved_by TEXT NOT NULL CHECK (approved_by IN ('user')),
    approved_at_us INTEGER NOT NULL
) STRICT;

CREATE INDEX instruction_approvals_by_file ON instruction_approvals (repository_id, path, sha256);

CREATE TABLE instruction_revocations (
    id INTEGER PRIMARY KEY,
    approval_id INTEGER NOT NULL UNIQUE REFERENCES instruction_approvals (id),
    revoked_by TEXT NOT NULL CHECK (revoked_by IN ('user')),
    revoked_at_us INTEGER NOT NULL
) STRICT;

CREATE TRIGGER instruction_approvals_are_immutable
BEFORE UPDATE ON instruction_approvals
BEGIN
    SELECT RAISE(ABORT, 'instruction approvals are immutable; revoke and approve again');
END;

CREATE TRIGGER instruction_approvals_are_never_deleted
BEFORE DELETE ON instruction_approvals
BEGIN
    SELECT RAISE(ABORT, 'instruction approvals are never deleted');
END;

CREATE TRIGGER instruction_revocations_are_immutable
BEFORE UPDATE ON instruction_revocations
BEGIN
    SELECT RAISE(ABORT, 'instruction revocations are immutable');
END;

CREATE TRIGGER instruction_revocations_are_never_deleted
BEFORE DELETE ON instruction_revocations
BEGIN
    SELECT RAISE(ABORT, 'instruction revocations are never deleted');
END;
