-- Authority indexes: every commit on the tool round trip writes one WAL page per index entry it adds
-- or moves, so the authority tables keep only the indexes a query or trigger needs, and indexes that
-- serve rare lookups become partial indexes the hot path never writes.
--
-- Which query each remaining index serves is asserted with EXPLAIN QUERY PLAN in
-- tests/integration/test_authority_query_plans.py.

-- Requests of a task are found through the UNIQUE (task_id, idempotency_key) index, which also answers
-- the idempotent retry of a submission; nothing reads them in (task_id, requested_at_us) order.
DROP INDEX tool_requests_by_task;

-- The only lookup by task is "the requests still waiting for a person": pending decisions only. Other
-- decisions (automatic, allowed-for-task, refusals, resolutions) never enter this index.
DROP INDEX authority_decisions_by_task;
CREATE INDEX authority_decisions_pending_by_task ON authority_decisions (task_id) WHERE outcome = 'pending';

-- The only lookup of executions by task is recovery's "outcome-unknown effects of this task"; an
-- execution enters this index only if it ends outcome-unknown.
DROP INDEX tool_executions_by_task;
CREATE INDEX tool_executions_unknown_by_task ON tool_executions (task_id) WHERE state = 'outcome-unknown';
