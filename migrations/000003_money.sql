-- Money: price snapshots, endpoint and ladder-rung approvals, per-task budgets, the budget ledger,
-- model requests and budget acknowledgements.
--
-- Amounts are integer minor units plus an ISO currency; a NULL amount is "unknown" and always comes
-- with a known flag of 0 (CHECK). Rates are exact fractions of a minor unit per token, kept as
-- INTEGER numerator/denominator pairs; no REAL column exists anywhere. Fact tables (price snapshots,
-- approvals, ledger entries, acknowledgements) refuse UPDATE and DELETE. Model requests move forward
-- only: planned -> in-flight | failed; in-flight -> succeeded | failed | outcome-unknown; an ended
-- request is immutable.

-- One revision of one model's rates. `shipped` rows record a default that codeflux ships, written the
-- first time a call is priced with it (so every request points at the exact rates it used); `user`
-- rows are `codeflux prices set` overrides. The newest user revision of a model is in force, else the
-- shipped default. A NULL pair is "no rate published" (unknown), never 0.
CREATE TABLE price_snapshots (
    id INTEGER PRIMARY KEY,
    provider TEXT NOT NULL CHECK (provider IN ('anthropic', 'openai', 'openai-compatible', 'scripted')),
    model TEXT NOT NULL CHECK (length(model) BETWEEN 1 AND 200 AND model NOT GLOB '*[^!-~]*'),
    revision INTEGER NOT NULL CHECK (revision >= 1),
    source TEXT NOT NULL CHECK (source IN ('shipped', 'user')),
    source_detail TEXT NOT NULL CHECK (length(source_detail) BETWEEN 1 AND 512),
    currency TEXT NOT NULL CHECK (length(currency) = 3 AND currency NOT GLOB '*[^A-Z]*'),
    effective_date TEXT NOT NULL CHECK (date(effective_date) IS effective_date),
    input_num INTEGER CHECK (input_num IS NULL OR input_num >= 0),
    input_den INTEGER CHECK (input_den IS NULL OR input_den >= 1),
    output_num INTEGER CHECK (output_num IS NULL OR output_num >= 0),
    output_den INTEGER CHECK (output_den IS NULL OR output_den >= 1),
    cache_read_num INTEGER CHECK (cache_read_num IS NULL OR cache_read_num >= 0),
    cache_read_den INTEGER CHECK (cache_read_den IS NULL OR cache_read_den >= 1),
    cache_write_num INTEGER CHECK (cache_write_num IS NULL OR cache_write_num >= 0),
    cache_write_den INTEGER CHECK (cache_write_den IS NULL OR cache_write_den >= 1),
    reasoning_num INTEGER CHECK (reasoning_num IS NULL OR reasoning_num >= 0),
    reasoning_den INTEGER CHECK (reasoning_den IS NULL OR reasoning_den >= 1),
    recorded_at_us INTEGER NOT NULL,
    UNIQUE (provider, model, revision),
    CHECK ((input_num IS NULL) = (input_den IS NULL)),
    CHECK ((output_num IS NULL) = (output_den IS NULL)),
    CHECK ((cache_read_num IS NULL) = (cache_read_den IS NULL)),
    CHECK ((cache_write_num IS NULL) = (cache_write_den IS NULL)),
    CHECK ((reasoning_num IS NULL) = (reasoning_den IS NULL))
) STRICT;

CREATE INDEX price_snapshots_by_model ON price_snapshots (provider, model, revision);

CREATE TRIGGER price_snapshots_revisions_count_up
BEFORE INSERT ON price_snapshots
WHEN NEW.revision IS NOT (SELECT coalesce(max(revision), 0) + 1 FROM price_snapshots
                         WHERE provider = NEW.provider AND model = NEW.model)
BEGIN
    SELECT RAISE(ABORT, 'a price revision is the next number for its model');
END;

CREATE TRIGGER price_snapshots_are_immutable
BEFORE UPDATE ON price_snapshots
BEGIN
    SELECT RAISE(ABORT, 'price snapshots are immutable; record a new revision');
END;

CREATE TRIGGER price_snapshots_are_never_deleted
BEFORE DELETE ON price_snapshots
BEGIN
    SELECT RAISE(ABORT, 'price snapshots are never deleted');
END;

-- A person approved this exact normalized base URL for this provider (the shipped default endpoints
-- need no row). Userinfo, query and fragment never reach here: the endpoint rules refuse them first.
CREATE TABLE endpoint_approvals (
    id INTEGER PRIMARY KEY,
    provider TEXT NOT NULL CHECK (provider IN ('anthropic', 'openai', 'openai-compatible')),
    base_url TEXT NOT NULL CHECK (length(base_url) BETWEEN 10 AND 2048
                                  AND (substr(base_url, 1, 8) = 'https://' OR substr(base_url, 1, 7) = 'http://')
                                  AND base_url NOT GLOB '*[^!-~]*' AND base_url NOT GLOB '*[?#@]*'
                                  AND substr(base_url, -1, 1) <> '/'),
    approved_by TEXT NOT NULL CHECK (approved_by IN ('user', 'headless-policy')),
    approved_at_us INTEGER NOT NULL,
    UNIQUE (provider, base_url)
) STRICT;

CREATE TRIGGER endpoint_approvals_are_immutable
BEFORE UPDATE ON endpoint_approvals
BEGIN
    SELECT RAISE(ABORT, 'endpoint approvals are immutable');
END;

CREATE TRIGGER endpoint_approvals_are_never_deleted
BEFORE DELETE ON endpoint_approvals
BEGIN
    SELECT RAISE(ABORT, 'endpoint approvals are never deleted');
END;

-- capable:max asks before its first call in a task; the answer is recorded here.
CREATE TABLE ladder_rung_approvals (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    rung TEXT NOT NULL CHECK (rung = 'capable:max'),
    approved_by TEXT NOT NULL CHECK (approved_by IN ('user', 'headless-policy')),
    approved_at_us INTEGER NOT NULL,
    PRIMARY KEY (task_id, rung)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER ladder_rung_approvals_are_immutable
BEFORE UPDATE ON ladder_rung_approvals
BEGIN
    SELECT RAISE(ABORT, 'ladder rung approvals are immutable');
END;

CREATE TRIGGER ladder_rung_approvals_are_never_deleted
BEFORE DELETE ON ladder_rung_approvals
BEGIN
    SELECT RAISE(ABORT, 'ladder rung approvals are never deleted');
END;

-- One hard budget per task. The currency never changes (the ledger is in it); the limit changes by
-- compare-and-set on `revision`, which also advances when an overrun or unknown charge is acknowledged.
-- allow_unknown_price: the person allowed calls whose price is unknown (their charges stay unknown).
CREATE TABLE budgets (
    task_id TEXT PRIMARY KEY REFERENCES tasks (id),
    currency TEXT NOT NULL CHECK (length(currency) = 3 AND currency NOT GLOB '*[^A-Z]*'),
    hard_limit_minor INTEGER NOT NULL CHECK (hard_limit_minor >= 0),
    warning_minor INTEGER CHECK (warning_minor IS NULL OR warning_minor BETWEEN 0 AND hard_limit_minor),
    token_limit INTEGER CHECK (token_limit IS NULL OR token_limit >= 0),
    allow_unknown_price INTEGER NOT NULL DEFAULT 0 CHECK (allow_unknown_price IN (0, 1)),
    revision INTEGER NOT NULL DEFAULT 0 CHECK (revision >= 0),
    created_at_us INTEGER NOT NULL,
    updated_at_us INTEGER NOT NULL,
    CHECK (updated_at_us >= created_at_us)
) STRICT;

CREATE TRIGGER budgets_keep_their_task_and_currency
BEFORE UPDATE ON budgets
WHEN NEW.task_id IS NOT OLD.task_id OR NEW.currency IS NOT OLD.currency
  OR NEW.created_at_us IS NOT OLD.created_at_us OR NEW.revision <> OLD.revision + 1
BEGIN
    SELECT RAISE(ABORT, 'a budget keeps its task and currency, and its revision advances by exactly one');
END;

CREATE TRIGGER budgets_are_never_deleted
BEFORE DELETE ON budgets
BEGIN
    SELECT RAISE(ABORT, 'budgets are never deleted');
END;

-- One model call. The intent (planned, with its reservation) is committed before the provider is
-- contacted; `in-flight` is committed right before the adapter is called, so a crash leaves either a
-- planned row (nothing was sent: it fails and its reservation is released) or an in-flight row (it may
-- have been billed: outcome-unknown, the bound is charged, never retried).
CREATE TABLE model_requests (
    id TEXT PRIMARY KEY CHECK (id GLOB 'mreq_?*' AND length(id) BETWEEN 13 AND 69),
    task_id TEXT NOT NULL REFERENCES budgets (task_id),
    idempotency_key TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    request_sha256 TEXT NOT NULL CHECK (length(request_sha256) = 64 AND request_sha256 NOT GLOB '*[^0-9a-f]*'),
    provider TEXT NOT NULL CHECK (provider IN ('anthropic', 'openai', 'openai-compatible', 'scripted')),
    base_url TEXT CHECK (base_url IS NULL OR length(base_url) BETWEEN 10 AND 2048),
    model TEXT NOT NULL CHECK (length(model) BETWEEN 1 AND 200),
    rung TEXT NOT NULL CHECK (rung IN ('cheap:low', 'cheap:medium', 'cheap:high', 'cheap:max', 'capable:low',
                                       'capable:medium', 'capable:high', 'capable:max')),
    state TEXT NOT NULL CHECK (state IN ('planned', 'in-flight', 'succeeded', 'failed', 'outcome-unknown')),
    price_snapshot_id INTEGER REFERENCES price_snapshots (id),
    currency TEXT NOT NULL CHECK (length(currency) = 3 AND currency NOT GLOB '*[^A-Z]*'),
    reserved_minor INTEGER CHECK (reserved_minor IS NULL OR reserved_minor >= 0),
    reserved_known INTEGER NOT NULL CHECK (reserved_known IN (0, 1)),
    reserved_reason TEXT CHECK (reserved_reason IS NULL OR length(reserved_reason) BETWEEN 1 AND 1024),
    reserved_tokens INTEGER NOT NULL CHECK (reserved_tokens >= 1),
    max_output_tokens INTEGER NOT NULL CHECK (max_output_tokens BETWEEN 1 AND 1000000),
    input_tokens INTEGER CHECK (input_tokens IS NULL OR input_tokens >= 0),
    output_tokens INTEGER CHECK (output_tokens IS NULL OR output_tokens >= 0),
    cache_read_tokens INTEGER CHECK (cache_read_tokens IS NULL OR cache_read_tokens >= 0),
    cache_write_tokens INTEGER CHECK (cache_write_tokens IS NULL OR cache_write_tokens >= 0),
    reasoning_tokens INTEGER CHECK (reasoning_tokens IS NULL OR reasoning_tokens >= 0),
    cost_minor INTEGER CHECK (cost_minor IS NULL OR cost_minor >= 0),
    cost_known INTEGER NOT NULL DEFAULT 0 CHECK (cost_known IN (0, 1)),
    cost_reason TEXT CHECK (cost_reason IS NULL OR length(cost_reason) BETWEEN 1 AND 1024),
    stop_reason TEXT CHECK (stop_reason IS NULL OR stop_reason IN ('end-turn', 'tool-use', 'max-tokens',
                                                                   'refused', 'other')),
    provider_request_id TEXT CHECK (provider_request_id IS NULL OR length(provider_request_id) BETWEEN 1 AND 256),
    error_kind TEXT CHECK (error_kind IS NULL OR (length(error_kind) BETWEEN 1 AND 64
                                                  AND error_kind NOT GLOB '*[^a-z0-9-]*')),
    error_message TEXT CHECK (error_message IS NULL OR length(error_message) <= 1024),
    planned_at_us INTEGER NOT NULL,
    started_at_us INTEGER,
    finished_at_us INTEGER,
    UNIQUE (task_id, idempotency_key),
    CHECK ((reserved_minor IS NULL) = (reserved_known = 0)),
    CHECK ((reserved_known = 0) = (reserved_reason IS NOT NULL)),
    CHECK ((cost_minor IS NULL) = (cost_known = 0)),
    CHECK ((state IN ('planned', 'in-flight')) = (finished_at_us IS NULL)),
    CHECK (state <> 'planned' OR started_at_us IS NULL),
    CHECK (state <> 'in-flight' OR started_at_us IS NOT NULL),
    CHECK (state IN ('succeeded', 'failed', 'outcome-unknown')
           OR (input_tokens IS NULL AND output_tokens IS NULL AND cache_read_tokens IS NULL
               AND cache_write_tokens IS NULL AND reasoning_tokens IS NULL AND cost_minor IS NULL
               AND cost_reason IS NULL AND stop_reason IS NULL AND provider_request_id IS NULL
               AND error_kind IS NULL AND error_message IS NULL)),
    CHECK (state <> 'succeeded' OR (error_kind IS NULL AND stop_reason IS NOT NULL)),
    CHECK (state NOT IN ('failed', 'outcome-unknown') OR error_kind IS NOT NULL),
    CHECK (state IN ('planned', 'in-flight') OR cost_known = 1 OR cost_reason IS NOT NULL),
    CHECK (reasoning_tokens IS NULL OR output_tokens IS NULL OR reasoning_tokens <= output_tokens)
) STRICT;

CREATE INDEX model_requests_by_task ON model_requests (task_id, planned_at_us);
CREATE INDEX model_requests_unfinished ON model_requests (state) WHERE state IN ('planned', 'in-flight');

CREATE TRIGGER model_requests_start_planned
BEFORE INSERT ON model_requests
WHEN NEW.state <> 'planned'
  OR NEW.currency IS NOT (SELECT currency FROM budgets WHERE task_id = NEW.task_id)
BEGIN
    SELECT RAISE(ABORT, 'a model request starts planned, in its budget''s currency');
END;

CREATE TRIGGER model_requests_only_move_forward
BEFORE UPDATE ON model_requests
WHEN NEW.id IS NOT OLD.id OR NEW.task_id IS NOT OLD.task_id OR NEW.idempotency_key IS NOT OLD.idempotency_key
  OR NEW.request_sha256 IS NOT OLD.request_sha256 OR NEW.provider IS NOT OLD.provider
  OR NEW.base_url IS NOT OLD.base_url OR NEW.model IS NOT OLD.model OR NEW.rung IS NOT OLD.rung
  OR NEW.price_snapshot_id IS NOT OLD.price_snapshot_id OR NEW.currency IS NOT OLD.currency
  OR NEW.reserved_minor IS NOT OLD.reserved_minor OR NEW.reserved_known IS NOT OLD.reserved_known
  OR NEW.reserved_reason IS NOT OLD.reserved_reason OR NEW.reserved_tokens IS NOT OLD.reserved_tokens
  OR NEW.max_output_tokens IS NOT OLD.max_output_tokens OR NEW.planned_at_us IS NOT OLD.planned_at_us
  OR NOT ((OLD.state = 'planned' AND NEW.state IN ('in-flight', 'failed'))
          OR (OLD.state = 'in-flight' AND NEW.state IN ('succeeded', 'failed', 'outcome-unknown')
              AND NEW.started_at_us IS OLD.started_at_us))
BEGIN
    SELECT RAISE(ABORT, 'a model request only moves forward, and is immutable once it ended');
END;

CREATE TRIGGER model_requests_are_never_deleted
BEFORE DELETE ON model_requests
BEGIN
    SELECT RAISE(ABORT, 'model requests are never deleted');
END;

-- The ledger. Per request: one `reserve` when it is planned, then exactly one way to close it:
--   settle (actual <= reserve) [+ release of the rest]   -- the provider reported usage and it is priced
--   settle (= reserve) + overrun (actual - reserve)       -- billed above the bound; never dropped
--   unknown-charge (= reserve, NULL when the reserve is)  -- usage or price unknown: the bound is charged
--   release (= reserve)                                   -- nothing was sent
-- `reserve`, `release` and `unknown-charge` may be unknown (NULL, known = 0); `settle` and `overrun`
-- are always known amounts.
CREATE TABLE budget_entries (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES budgets (task_id),
    request_id TEXT NOT NULL REFERENCES model_requests (id),
    kind TEXT NOT NULL CHECK (kind IN ('reserve', 'settle', 'release', 'overrun', 'unknown-charge')),
    amount_minor INTEGER CHECK (amount_minor IS NULL OR amount_minor >= 0),
    amount_known INTEGER NOT NULL CHECK (amount_known IN (0, 1)),
    currency TEXT NOT NULL CHECK (length(currency) = 3 AND currency NOT GLOB '*[^A-Z]*'),
    reason TEXT CHECK (reason IS NULL OR length(reason) BETWEEN 1 AND 1024),
    recorded_at_us INTEGER NOT NULL,
    UNIQUE (request_id, kind),
    CHECK ((amount_minor IS NULL) = (amount_known = 0)),
    CHECK (kind NOT IN ('settle', 'overrun') OR amount_known = 1),
    CHECK (kind <> 'overrun' OR amount_minor > 0),
    CHECK (amount_known = 1 OR reason IS NOT NULL),
    CHECK (kind NOT IN ('overrun', 'unknown-charge') OR reason IS NOT NULL)
) STRICT;

CREATE INDEX budget_entries_by_task ON budget_entries (task_id, id);

CREATE TRIGGER budget_entries_follow_their_request
BEFORE INSERT ON budget_entries
WHEN NOT EXISTS (SELECT 1 FROM model_requests
                 WHERE id = NEW.request_id AND task_id = NEW.task_id AND currency = NEW.currency)
  OR (NEW.kind = 'reserve'
      AND NEW.amount_minor IS NOT (SELECT reserved_minor FROM model_requests WHERE id = NEW.request_id))
  OR (NEW.kind <> 'reserve'
      AND NOT EXISTS (SELECT 1 FROM budget_entries WHERE request_id = NEW.request_id AND kind = 'reserve'))
BEGIN
    SELECT RAISE(ABORT, 'a ledger entry follows its request: its task, currency and reservation');
END;

CREATE TRIGGER budget_entries_close_a_reservation_once
BEFORE INSERT ON budget_entries
WHEN (NEW.kind = 'settle'
      AND (EXISTS (SELECT 1 FROM budget_entries WHERE request_id = NEW.request_id
                   AND kind IN ('release', 'overrun', 'unknown-charge'))
           OR NEW.amount_minor > coalesce((SELECT amount_minor FROM budget_entries
                                           WHERE request_id = NEW.request_id AND kind = 'reserve'),
                                          NEW.amount_minor)))
  OR (NEW.kind = 'release'
      AND (EXISTS (SELECT 1 FROM budget_entries WHERE request_id = NEW.request_id
                   AND kind IN ('overrun', 'unknown-charge'))
           OR NEW.amount_minor IS NOT (SELECT r.amount_minor - coalesce(s.amount_minor, 0)
                                       FROM budget_entries r
                                       LEFT JOIN budget_entries s ON s.request_id = r.request_id AND s.kind = 'settle'
                                       WHERE r.request_id = NEW.request_id AND r.kind = 'reserve')))
  OR (NEW.kind = 'overrun'
      AND (EXISTS (SELECT 1 FROM budget_entries WHERE request_id = NEW.request_id
                   AND kind IN ('release', 'unknown-charge'))
           OR NOT EXISTS (SELECT 1 FROM budget_entries s JOIN budget_entries r
                          ON r.request_id = s.request_id AND r.kind = 'reserve'
                          WHERE s.request_id = NEW.request_id AND s.kind = 'settle'
                            AND r.amount_minor IS NOT NULL AND s.amount_minor = r.amount_minor)))
  OR (NEW.kind = 'unknown-charge'
      AND (EXISTS (SELECT 1 FROM budget_entries WHERE request_id = NEW.request_id
                   AND kind IN ('settle', 'release', 'overrun'))
           OR NEW.amount_minor IS NOT (SELECT amount_minor FROM budget_entries
                                       WHERE request_id = NEW.request_id AND kind = 'reserve')))
BEGIN
    SELECT RAISE(ABORT, 'a reservation closes once: settle [+ release | + overrun], unknown-charge or release');
END;

CREATE TRIGGER budget_entries_are_immutable
BEFORE UPDATE ON budget_entries
BEGIN
    SELECT RAISE(ABORT, 'budget ledger entries are immutable');
END;

CREATE TRIGGER budget_entries_are_never_deleted
BEFORE DELETE ON budget_entries
BEGIN
    SELECT RAISE(ABORT, 'budget ledger entries are never deleted');
END;

-- A person (or the task's standing allowance of unknown-price calls) accepted an overrun or an unknown
-- charge. Until then it blocks every further paid call of the task.
CREATE TABLE budget_acknowledgements (
    id INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES budgets (task_id),
    entry_id INTEGER NOT NULL UNIQUE REFERENCES budget_entries (id),
    acknowledged_by TEXT NOT NULL CHECK (acknowledged_by IN ('user', 'headless-policy', 'standing-allowance')),
    note TEXT CHECK (note IS NULL OR length(note) BETWEEN 1 AND 1024),
    acknowledged_at_us INTEGER NOT NULL
) STRICT;

CREATE TRIGGER budget_acknowledgements_name_a_charge_of_their_task
BEFORE INSERT ON budget_acknowledgements
WHEN NOT EXISTS (SELECT 1 FROM budget_entries
                 WHERE id = NEW.entry_id AND task_id = NEW.task_id AND kind IN ('overrun', 'unknown-charge'))
  OR (NEW.acknowledged_by = 'standing-allowance'
      AND NOT EXISTS (SELECT 1 FROM budget_entries e JOIN budgets b ON b.task_id = e.task_id
                      WHERE e.id = NEW.entry_id AND e.kind = 'unknown-charge' AND e.amount_minor IS NULL
                        AND b.allow_unknown_price = 1))
BEGIN
    SELECT RAISE(ABORT, 'an acknowledgement names an overrun or unknown charge of its own task');
END;

CREATE TRIGGER budget_acknowledgements_are_immutable
BEFORE UPDATE ON budget_acknowledgements
BEGIN
    SELECT RAISE(ABORT, 'budget acknowledgements are immutable');
END;

CREATE TRIGGER budget_acknowledgements_are_never_deleted
BEFORE DELETE ON budget_acknowledgements
BEGIN
    SELECT RAISE(ABORT, 'budget acknowledgements are never deleted');
END;
