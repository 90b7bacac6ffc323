-- Repository approvals: a person's "allow for this repository" (docs/security.md, "Allow for this repository").
--
-- repository_approvals binds one repository operation identity (the task's canonical operation document with
-- task_id replaced by the repository's sorted root commits; codeflux/domain/repository_approvals.py) and names
-- the decision it came from: the person's allowed-for-task decision on a request of a task of that repository.
-- operation_json is that repository-scoped canonical document (what was allowed, shown in lists). Revoking
-- writes a row in repository_approval_revocations (once per approval); an approval with a revocation never
-- covers again. repository_approval_uses names, for every decision a repository approval made automatically
-- in a later task, the approval it rests on, so the evidence says why the request ran. All three are facts:
-- they refuse UPDATE and DELETE.

CREATE TABLE repository_approvals (
    id TEXT PRIMARY KEY CHECK (id GLOB 'rap_?*' AND length(id) BETWEEN 12 AND 68
                               AND substr(id, 5) NOT GLOB '*[^0-9a-z]*'),
    repository_roots_json TEXT NOT NULL CHECK (json_valid(repository_roots_json)
                                               AND json_type(repository_roots_json) = 'array'
                                               AND json_array_length(repository_roots_json) >= 1),
    repository_identity TEXT NOT NULL CHECK (length(repository_identity) = 64
                                             AND repository_identity NOT GLOB '*[^0-9a-f]*'),
    operation_json TEXT NOT NULL CHECK (json_valid(operation_json) AND json_type(operation_json) = 'object'
                                        AND json_type(operation_json, '$.task_id') IS NULL
                                        AND json_type(operation_json, '$.repository_roots') = 'array'
                                        AND length(CAST(operation_json AS BLOB)) <= 4194304),
    task_id TEXT NOT NULL REFERENCES tasks (id),
    request_id TEXT NOT NULL UNIQUE REFERENCES tool_requests (id),
    decision_id TEXT NOT NULL UNIQUE REFERENCES authority_decisions (id),
    reason TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 2048),
    created_at_us INTEGER NOT NULL,
    CHECK (json_extract(operation_json, '$.repository_roots') = json(repository_roots_json))
) STRICT;

CREATE INDEX repository_approvals_by_identity ON repository_approvals (repository_identity);

CREATE TRIGGER repository_approvals_come_from_a_persons_decision
BEFORE INSERT ON repository_approvals
WHEN NOT EXISTS (SELECT 1 FROM authority_decisions
                 WHERE id = NEW.decision_id AND request_id = NEW.request_id AND task_id = NEW.task_id
                   AND outcome = 'allowed-for-task' AND decided_by = 'user')
BEGIN
    SELECT RAISE(ABORT, 'a repository approval comes from a person''s allowed-for-task decision on its request');
END;

CREATE TRIGGER repository_approvals_are_immutable
BEFORE UPDATE ON repository_approvals
BEGIN
    SELECT RAISE(ABORT, 'repository approvals are immutable');
END;

CREATE TRIGGER repository_approvals_are_never_deleted
BEFORE DELETE ON repository_approvals
BEGIN
    SELECT RAISE(ABORT, 'repository approvals are never deleted');
END;

CREATE TABLE repository_approval_revocations (
    id TEXT PRIMARY KEY CHECK (id GLOB 'rvk_?*' AND length(id) BETWEEN 12 AND 68),
    repository_approval_id TEXT NOT NULL UNIQUE REFERENCES repository_approvals (id),
    reason TEXT NOT NULL CHECK (length(reason) BETWEEN 1 AND 2048),
    revoked_at_us INTEGER NOT NULL
) STRICT;

CREATE TRIGGER repository_approval_revocations_are_immutable
BEFORE UPDATE ON repository_approval_revocations
BEGIN
    SELECT RAISE(ABORT, 'repository approval revocations are immutable');
END;

CREATE TRIGGER repository_approval_revocations_are_never_deleted
BEFORE DELETE ON repository_approval_revocations
BEGIN
    SELECT RAISE(ABORT, 'repository approval revocations are never deleted');
END;

CREATE TABLE repository_approval_uses (
    decision_id TEXT PRIMARY KEY REFERENCES authority_decisions (id),
    repository_approval_id TEXT NOT NULL REFERENCES repository_approvals (id),
    used_at_us INTEGER NOT NULL
) STRICT;

CREATE INDEX repository_approval_uses_by_approval ON repository_approval_uses (repository_approval_id);

CREATE TRIGGER repository_approval_uses_need_a_live_approval
BEFORE INSERT ON repository_approval_uses
WHEN EXISTS (SELECT 1 FROM repository_approval_revocations
             WHERE repository_approval_id = NEW.repository_approval_id)
  OR NOT EXISTS (SELECT 1 FROM authority_decisions WHERE id = NEW.decision_id AND outcome = 'allowed-once')
BEGIN
    SELECT RAISE(ABORT, 'a repository approval decides only while live, by an allowed-once decision');
END;

CREATE TRIGGER repository_approval_uses_are_immutable
BEFORE UPDATE ON repository_approval_uses
BEGIN
    SELECT RAISE(ABORT, 'repository approval uses are immutable');
END;

CREATE TRIGGER repository_approval_uses_are_never_deleted
BEFORE DELETE ON repository_approval_uses
BEGIN
    SELECT RAISE(ABORT, 'repository approval uses are never deleted');
END;
