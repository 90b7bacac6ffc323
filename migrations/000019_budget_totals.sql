-- A running total of each task's budget ledger (issue 21, `bench gateway`): the figures `ledger_totals` summed over
-- the whole ledger on every model call (twice per call, growing with the calls of the task) are kept in one row
-- per budget, maintained by the triggers below in the transaction that writes the ledger entry, the
-- acknowledgement or the model request they follow. Nothing else writes this table; the ledger entries, the
-- acknowledgements and the ended requests stay the immutable facts, and `recount_ledger_totals`
-- (codeflux/store/money.py) still computes the same figures from them (tests compare the two).
--
-- open_requests / reserved_minor / reserved_unknown: reservations not closed yet (count, known sum, unknown ones);
-- spent_minor / spent_unknown: settle + overrun + unknown-charge entries (known sum, unknown ones);
-- charged_at_bound / charged_at_bound_minor: known unknown-charge entries (count, sum); overrun_minor: overruns;
-- pending_decisions: overruns and unknown charges not acknowledged; tokens_used: the tokens of ended requests
-- (their reported usage, else the reserved tokens when a settle or unknown-charge entry charged them);
-- tokens_reserved: the reserved tokens of requests still planned or in flight.

CREATE TABLE budget_totals (
    task_id TEXT PRIMARY KEY REFERENCES budgets (task_id),
    open_requests INTEGER NOT NULL DEFAULT 0 CHECK (open_requests >= 0),
    reserved_minor INTEGER NOT NULL DEFAULT 0 CHECK (reserved_minor >= 0),
    reserved_unknown INTEGER NOT NULL DEFAULT 0 CHECK (reserved_unknown >= 0),
    spent_minor INTEGER NOT NULL DEFAULT 0 CHECK (spent_minor >= 0),
    spent_unknown INTEGER NOT NULL DEFAULT 0 CHECK (spent_unknown >= 0),
    charged_at_bound INTEGER NOT NULL DEFAULT 0 CHECK (charged_at_bound >= 0),
    charged_at_bound_minor INTEGER NOT NULL DEFAULT 0 CHECK (charged_at_bound_minor >= 0),
    overrun_minor INTEGER NOT NULL DEFAULT 0 CHECK (overrun_minor >= 0),
    pending_decisions INTEGER NOT NULL DEFAULT 0 CHECK (pending_decisions >= 0),
    tokens_used INTEGER NOT NULL DEFAULT 0 CHECK (tokens_used >= 0),
    tokens_reserved INTEGER NOT NULL DEFAULT 0 CHECK (tokens_reserved >= 0)
) STRICT, WITHOUT ROWID;

-- The overruns and unknown charges of a task (the pending decisions are read from these only).
CREATE INDEX budget_entries_charges_by_task ON budget_entries (task_id, id) WHERE kind IN ('overrun', 'unknown-charge');

-- The budgets that exist already: their totals from their ledger (the same sums as recount_ledger_totals).
INSERT INTO budget_totals (task_id, open_requests, reserved_minor, reserved_unknown, spent_minor, spent_unknown,
                           charged_at_bound, charged_at_bound_minor, overrun_minor, pending_decisions, tokens_used,
                           tokens_reserved)
SELECT b.task_id,
       (SELECT count(*) FROM budget_entries r WHERE r.task_id = b.task_id AND r.kind = 'reserve'
          AND NOT EXISTS (SELECT 1 FROM budget_entries c WHERE c.request_id = r.request_id AND c.kind <> 'reserve')),
       (SELECT coalesce(sum(r.amount_minor), 0) FROM budget_entries r WHERE r.task_id = b.task_id AND r.kind = 'reserve'
          AND NOT EXISTS (SELECT 1 FROM budget_entries c WHERE c.request_id = r.request_id AND c.kind <> 'reserve')),
       (SELECT count(*) FROM budget_entries r WHERE r.task_id = b.task_id AND r.kind = 'reserve'
          AND r.amount_minor IS NULL
          AND NOT EXISTS (SELECT 1 FROM budget_entries c WHERE c.request_id = r.request_id AND c.kind <> 'reserve')),
       (SELECT coalesce(sum(amount_minor), 0) FROM budget_entries
          WHERE task_id = b.task_id AND kind IN ('settle', 'overrun', 'unknown-charge')),
       (SELECT count(*) FROM budget_entries
          WHERE task_id = b.task_id AND kind IN ('settle', 'overrun', 'unknown-charge') AND amount_minor IS NULL),
       (SELECT count(*) FROM budget_entries
          WHERE task_id = b.task_id AND kind = 'unknown-charge' AND amount_minor IS NOT NULL),
       (SELECT coalesce(sum(amount_minor), 0) FROM budget_entries WHERE task_id = b.task_id AND kind = 'unknown-charge'),
       (SELECT coalesce(sum(amount_minor), 0) FROM budget_entries WHERE task_id = b.task_id AND kind = 'overrun'),
       (SELECT count(*) FROM budget_entries e LEFT JOIN budget_acknowledgements a ON a.entry_id = e.id
          WHERE e.task_id = b.task_id AND e.kind IN ('overrun', 'unknown-charge') AND a.id IS NULL),
       (SELECT coalesce(sum(CASE
            WHEN m.state IN ('planned', 'in-flight') THEN 0
            WHEN m.input_tokens IS NOT NULL AND m.output_tokens IS NOT NULL AND m.cache_read_tokens IS NOT NULL
             AND m.cache_write_tokens IS NOT NULL
             THEN m.input_tokens + m.output_tokens + m.cache_read_tokens + m.cache_write_tokens
            WHEN EXISTS (SELECT 1 FROM budget_entries u WHERE u.request_id = m.id
             AND u.kind IN ('unknown-charge', 'settle')) THEN m.reserved_tokens
            ELSE 0 END), 0) FROM model_requests m WHERE m.task_id = b.task_id),
       (SELECT coalesce(sum(m.reserved_tokens), 0) FROM model_requests m
          WHERE m.task_id = b.task_id AND m.state IN ('planned', 'in-flight'))
FROM budgets b;

CREATE TRIGGER budget_totals_start_with_the_budget
AFTER INSERT ON budgets
BEGIN
    INSERT INTO budget_totals (task_id) VALUES (NEW.task_id);
END;

CREATE TRIGGER budget_totals_count_a_reservation
AFTER INSERT ON budget_entries
WHEN NEW.kind = 'reserve'
BEGIN
    UPDATE budget_totals SET open_requests = open_requests + 1,
                             reserved_minor = reserved_minor + coalesce(NEW.amount_minor, 0),
                             reserved_unknown = reserved_unknown + (NEW.amount_minor IS NULL)
    WHERE task_id = NEW.task_id;
END;

-- The first closing entry of a request closes its reservation (the ledger's triggers allow one way to close it).
CREATE TRIGGER budget_totals_close_a_reservation
AFTER INSERT ON budget_entries
WHEN NEW.kind <> 'reserve'
  AND NOT EXISTS (SELECT 1 FROM budget_entries c WHERE c.request_id = NEW.request_id AND c.kind <> 'reserve'
                  AND c.id <> NEW.id)
BEGIN
    UPDATE budget_totals
    SET open_requests = open_requests - 1,
        reserved_minor = reserved_minor - coalesce((SELECT r.amount_minor FROM budget_entries r
                                                    WHERE r.request_id = NEW.request_id AND r.kind = 'reserve'), 0),
        reserved_unknown = reserved_unknown - (SELECT r.amount_minor IS NULL FROM budget_entries r
                                               WHERE r.request_id = NEW.request_id AND r.kind = 'reserve')
    WHERE task_id = NEW.task_id;
END;

CREATE TRIGGER budget_totals_count_a_charge
AFTER INSERT ON budget_entries
WHEN NEW.kind IN ('settle', 'overrun', 'unknown-charge')
BEGIN
    UPDATE budget_totals
    SET spent_minor = spent_minor + coalesce(NEW.amount_minor, 0),
        spent_unknown = spent_unknown + (NEW.amount_minor IS NULL),
        charged_at_bound = charged_at_bound + (NEW.kind = 'unknown-charge' AND NEW.amount_minor IS NOT NULL),
        charged_at_bound_minor = charged_at_bound_minor
                                 + CASE WHEN NEW.kind = 'unknown-charge' THEN coalesce(NEW.amount_minor, 0) ELSE 0 END,
        overrun_minor = overrun_minor + CASE WHEN NEW.kind = 'overrun' THEN NEW.amount_minor ELSE 0 END,
        pending_decisions = pending_decisions + (NEW.kind IN ('overrun', 'unknown-charge')),
        -- a request that ended without its full usage is charged its reserved tokens (see the update trigger)
        tokens_used = tokens_used + CASE WHEN NEW.kind IN ('settle', 'unknown-charge') THEN coalesce(
            (SELECT m.reserved_tokens FROM model_requests m
             WHERE m.id = NEW.request_id AND m.state NOT IN ('planned', 'in-flight')
               AND (m.input_tokens IS NULL OR m.output_tokens IS NULL OR m.cache_read_tokens IS NULL
                    OR m.cache_write_tokens IS NULL)), 0) ELSE 0 END
    WHERE task_id = NEW.task_id;
END;

CREATE TRIGGER budget_totals_count_an_acknowledgement
AFTER INSERT ON budget_acknowledgements
BEGIN
    UPDATE budget_totals SET pending_decisions = pending_decisions - 1 WHERE task_id = NEW.task_id;
END;

CREATE TRIGGER budget_totals_reserve_tokens
AFTER INSERT ON model_requests
BEGIN
    UPDATE budget_totals SET tokens_reserved = tokens_reserved + NEW.reserved_tokens WHERE task_id = NEW.task_id;
END;

-- A request ends once (model_requests_only_move_forward): its reserved tokens are no longer reserved, and its
-- usage is counted — the reported usage, else its reserved tokens when a settle or unknown-charge entry was
-- written before the end (one written after it is counted by budget_totals_count_a_charge).
CREATE TRIGGER budget_totals_end_a_request
AFTER UPDATE OF state ON model_requests
WHEN OLD.state IN ('planned', 'in-flight') AND NEW.state NOT IN ('planned', 'in-flight')
BEGIN
    UPDATE budget_totals
    SET tokens_reserved = tokens_reserved - OLD.reserved_tokens,
        tokens_used = tokens_used + CASE
            WHEN NEW.input_tokens IS NOT NULL AND NEW.output_tokens IS NOT NULL AND NEW.cache_read_tokens IS NOT NULL
             AND NEW.cache_write_tokens IS NOT NULL
             THEN NEW.input_tokens + NEW.output_tokens + NEW.cache_read_tokens + NEW.cache_write_tokens
            WHEN EXISTS (SELECT 1 FROM budget_entries u WHERE u.request_id = NEW.id
                         AND u.kind IN ('unknown-charge', 'settle')) THEN NEW.reserved_tokens
            ELSE 0 END
    WHERE task_id = NEW.task_id;
END;
