"""SQL of budgets and the budget ledger: per-task limits, immutable entries, acknowledgements, totals.

Amounts are integer minor units; ``None`` is unknown (the column's known flag is 0). The ledger's
triggers close each reservation exactly once (see ``migrations/000003_money.sql``). Ledger entries and
their acknowledgements are written only by ``codeflux.coordinator.spending.ledger`` (a test keeps it so),
inside the transaction of the outcome they belong to. Nothing here builds or accepts a binary
floating-point number.
"""

from __future__ import annotations

from codeflux.domain.budget import Budget, LedgerEntryRow, LedgerKind, LedgerTotals
from codeflux.domain.errors import NotFoundError, StaleRevisionError
from codeflux.domain.ids import TaskId
from codeflux.domain.money import Currency, Money
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice

__all__ = [
    "LedgerEntryRow",
    "budget_and_totals",
    "budget_entries_of_request",
    "budget_entries_of_task",
    "change_budget",
    "has_budget_entries",
    "insert_acknowledgement",
    "insert_budget",
    "insert_budget_entry",
    "ledger_totals",
    "read_budget",
    "recount_ledger_totals",
    "require_budget",
]

_BUDGET = ("task_id, currency, hard_limit_minor, warning_minor, token_limit, allow_unknown_price, revision,"
           " created_at_us, updated_at_us")
_TOTALS = ("open_requests, reserved_minor, reserved_unknown, spent_minor, spent_unknown, charged_at_bound,"
           " charged_at_bound_minor, overrun_minor, pending_decisions, tokens_used, tokens_reserved")
_ENTRY = "e.id, e.task_id, e.request_id, e.kind, e.amount_minor, e.currency, e.reason, e.recorded_at_us, a.id"
# A request has at most three entries: each one's acknowledgement is looked up by its key (cheaper than a join).
_ENTRY_OF_REQUEST = ("e.id, e.task_id, e.request_id, e.kind, e.amount_minor, e.currency, e.reason, e.recorded_at_us,"
                     " (SELECT a.id FROM budget_acknowledgements a WHERE a.entry_id = e.id)")


def _int(value: object) -> int:
    # an INTEGER column's value as it is (every model call decodes ≈ 35); anything else through its text
    return value if type(value) is int else int(str(value))


def _maybe_int(value: object) -> int | None:
    return None if value is None else _int(value)


def _maybe_text(value: object) -> str | None:
    return None if value is None else str(value)


def _budget_row(row: Row) -> Budget:
    currency = Currency.parse(str(row[1]))
    warning = _maybe_int(row[3])
    return Budget(
        task_id=TaskId.parse(str(row[0])), hard_limit=Money(minor=_int(row[2]), currency=currency),
        warning=None if warning is None else Money(minor=warning, currency=currency),
        token_limit=_maybe_int(row[4]), allow_unknown_price=bool(row[5]), revision=_int(row[6]),
        created_at_us=_int(row[7]), updated_at_us=_int(row[8]),
    )


def read_budget(view: ReadView, task_id: TaskId) -> Budget | None:
    row = view.query_one(f"SELECT {_BUDGET} FROM budgets WHERE task_id = ?", (task_id.value,))  # noqa: S608
    return None if row is None else _budget_row(row)


def require_budget(view: ReadView, task_id: TaskId) -> Budget:
    budget = read_budget(view, task_id)
    if budget is None:
        raise NotFoundError(kind="budget of task", entity_id=task_id.value)
    return budget


def insert_budget(
    tx: Transaction, *, task_id: TaskId, hard_limit: Money, warning: Money | None, token_limit: int | None,
    allow_unknown_price: bool, at_us: int,
) -> Budget:  # fmt: skip
    rows = tx.execute(
        f"INSERT INTO budgets ({_BUDGET}) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?) RETURNING {_BUDGET}",  # noqa: S608
        (task_id.value, hard_limit.currency.code, hard_limit.minor, None if warning is None else warning.minor,
         token_limit, int(allow_unknown_price), at_us, at_us),
    )
    return _budget_row(rows[0])


def change_budget(
    tx: Transaction, *, task_id: TaskId, expected_revision: int, hard_limit: Money, warning: Money | None,
    token_limit: int | None, allow_unknown_price: bool, at_us: int,
) -> Budget:  # fmt: skip
    """Compare-and-set the budget's limits (an unchanged one just advances the revision)."""
    rows = tx.execute(
        "UPDATE budgets SET hard_limit_minor = ?, warning_minor = ?, token_limit = ?, allow_unknown_price = ?,"  # noqa: S608
        " revision = revision + 1, updated_at_us = max(updated_at_us, ?)"
        f" WHERE task_id = ? AND revision = ? RETURNING {_BUDGET}",
        (hard_limit.minor, None if warning is None else warning.minor, token_limit, int(allow_unknown_price),
         at_us, task_id.value, expected_revision),
    )
    if rows:
        return _budget_row(rows[0])
    current = read_budget(tx, task_id)
    raise StaleRevisionError(kind="budget", entity_id=task_id.value, expected=expected_revision,
                             actual=None if current is None else current.revision)


# ─── the ledger ──────────────────────────────────────────────────────────────────────────────────


def insert_budget_entry(
    tx: Transaction, *, task_id: TaskId, request_id: str, kind: LedgerKind, amount_minor: int | None,
    currency: Currency,
    reason: str | None, at_us: int,
) -> int:  # fmt: skip
    """Append one ledger entry; the triggers keep each reservation closed exactly once."""
    rows = tx.execute(
        "INSERT INTO budget_entries (task_id, request_id, kind, amount_minor, amount_known, currency, reason,"
        " recorded_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (task_id.value, request_id, kind.value, amount_minor, int(amount_minor is not None), currency.code, reason,
         at_us),
    )
    return _int(rows[0][0])


def budget_entries_of_task(view: ReadView, task_id: TaskId, *, limit: int = 10_000) -> list[LedgerEntryRow]:
    """The task's ledger, oldest first, each with whether it was acknowledged."""
    rows = view.query_all(
        f"SELECT {_ENTRY} FROM budget_entries e LEFT JOIN budget_acknowledgements a ON a.entry_id = e.id"  # noqa: S608
        " WHERE e.task_id = ? ORDER BY e.id LIMIT ?",
        (task_id.value, limit),
    )
    return [_entry(r) for r in rows]


def budget_entries_of_request(view: ReadView, request_id: str) -> list[LedgerEntryRow]:
    """One model request's entries, oldest first: its ``reserve`` and whatever closed it."""
    rows = view.query_all(
        f"SELECT {_ENTRY_OF_REQUEST} FROM budget_entries e WHERE e.request_id = ?",  # noqa: S608
        (request_id,),
    )
    return sorted((_entry(r) for r in rows), key=lambda entry: entry.entry_id)  # at most three: no sort in SQL


def _entry(r: Row) -> LedgerEntryRow:
    return LedgerEntryRow(entry_id=_int(r[0]), task_id=TaskId.parse(str(r[1])), request_id=str(r[2]),
                          kind=decode_choice(LedgerKind, r[3], kind="budget ledger entry kind"),
                          amount_minor=_maybe_int(r[4]), currency=Currency.parse(str(r[5])),
                          reason=_maybe_text(r[6]), recorded_at_us=_int(r[7]), acknowledged=r[8] is not None)


def insert_acknowledgement(
    tx: Transaction, *, task_id: TaskId, entry_id: int, acknowledged_by: str, note: str | None, at_us: int
) -> None:
    tx.execute(
        "INSERT INTO budget_acknowledgements (task_id, entry_id, acknowledged_by, note, acknowledged_at_us)"
        " VALUES (?, ?, ?, ?, ?)",
        (task_id.value, entry_id, acknowledged_by, note, at_us),
    )


def ledger_totals(view: ReadView, task_id: TaskId) -> LedgerTotals:
    """Reserved = the reservations of requests not closed yet; spent = settled + overruns + charges.

    Read from the task's running total (``budget_totals``, kept by the schema's triggers in the transaction of
    every ledger entry, acknowledgement and request end): one row, however long the ledger; the pending decisions
    are read only when there are some. :func:`recount_ledger_totals` sums the same figures over the ledger."""
    row = view.query_one(f"SELECT {_TOTALS} FROM budget_totals WHERE task_id = ?", (task_id.value,))  # noqa: S608
    if row is None:
        return _totals((0,) * 11, pending=())
    pending = () if _int(row[8]) == 0 else _pending_decisions(view, task_id)
    return _totals(row, pending=pending)


def budget_and_totals(view: ReadView, task_id: TaskId) -> tuple[Budget, LedgerTotals] | None:
    """The task's budget and :func:`ledger_totals` in one read (None without a budget)."""
    budget = read_budget(view, task_id)  # two primary-key reads cost less than their join (measured)
    return None if budget is None else (budget, ledger_totals(view, task_id))


def has_budget_entries(view: ReadView, request_id: str) -> bool:
    """Whether the model request ``request_id`` has any ledger entry."""
    return view.query_one("SELECT 1 FROM budget_entries WHERE request_id = ? LIMIT 1", (request_id,)) is not None


def _pending_decisions(view: ReadView, task_id: TaskId) -> tuple[int, ...]:
    rows = view.query_all(
        "SELECT e.id FROM budget_entries e LEFT JOIN budget_acknowledgements a ON a.entry_id = e.id"
        " WHERE e.task_id = ? AND e.kind IN ('overrun', 'unknown-charge') AND a.id IS NULL ORDER BY e.id",
        (task_id.value,),
    )
    return tuple(_int(r[0]) for r in rows)


def _totals(row: Row, *, pending: tuple[int, ...]) -> LedgerTotals:
    return LedgerTotals(
        open_requests=_int(row[0]), reserved_minor=_int(row[1]), reserved_unknown=_int(row[2]),
        spent_minor=_int(row[3]), spent_unknown=_int(row[4]), charged_at_bound=_int(row[5]),
        charged_at_bound_minor=_int(row[6]), overrun_minor=_int(row[7]), pending_decisions=pending,
        tokens_used=_int(row[9]), tokens_reserved=_int(row[10]),
    )


def recount_ledger_totals(view: ReadView, task_id: TaskId) -> LedgerTotals:
    """:func:`ledger_totals` summed over the task's whole ledger (the facts the running total follows): what
    the running total must equal (tests/unit/store/test_budget_entries.py compares the two)."""
    task = task_id.value
    reserved = view.query_one(
        "SELECT count(*), coalesce(sum(r.amount_minor), 0), count(*) - count(r.amount_minor) FROM budget_entries r"
        " WHERE r.task_id = ? AND r.kind = 'reserve' AND NOT EXISTS (SELECT 1 FROM budget_entries c"
        " WHERE c.request_id = r.request_id AND c.kind <> 'reserve')",
        (task,),
    ) or (0, 0, 0)
    spent = view.query_one(
        "SELECT coalesce(sum(amount_minor), 0), count(*) - count(amount_minor),"
        " count(CASE WHEN kind = 'unknown-charge' AND amount_minor IS NOT NULL THEN 1 END),"
        " coalesce(sum(CASE WHEN kind = 'unknown-charge' THEN amount_minor END), 0),"
        " coalesce(sum(CASE WHEN kind = 'overrun' THEN amount_minor END), 0)"
        " FROM budget_entries WHERE task_id = ? AND kind IN ('settle', 'overrun', 'unknown-charge')",
        (task,),
    ) or (0, 0, 0, 0, 0)
    pending = view.query_all(
        "SELECT e.id FROM budget_entries e LEFT JOIN budget_acknowledgements a ON a.entry_id = e.id"
        " WHERE e.task_id = ? AND e.kind IN ('overrun', 'unknown-charge') AND a.id IS NULL ORDER BY e.id",
        (task,),
    )
    tokens = view.query_one(
        "SELECT coalesce(sum(CASE"
        " WHEN m.state IN ('planned', 'in-flight') THEN 0"
        " WHEN m.input_tokens IS NOT NULL AND m.output_tokens IS NOT NULL AND m.cache_read_tokens IS NOT NULL"
        "  AND m.cache_write_tokens IS NOT NULL"
        "  THEN m.input_tokens + m.output_tokens + m.cache_read_tokens + m.cache_write_tokens"
        " WHEN EXISTS (SELECT 1 FROM budget_entries u WHERE u.request_id = m.id"
        "  AND u.kind IN ('unknown-charge', 'settle')) THEN m.reserved_tokens"
        " ELSE 0 END), 0),"
        " coalesce(sum(CASE WHEN m.state IN ('planned', 'in-flight') THEN m.reserved_tokens ELSE 0 END), 0)"
        " FROM model_requests m WHERE m.task_id = ?",
        (task,),
    ) or (0, 0)
    return LedgerTotals(
        open_requests=_int(reserved[0]), reserved_minor=_int(reserved[1]), reserved_unknown=_int(reserved[2]),
        spent_minor=_int(spent[0]), spent_unknown=_int(spent[1]), charged_at_bound=_int(spent[2]),
        charged_at_bound_minor=_int(spent[3]), overrun_minor=_int(spent[4]),
        pending_decisions=tuple(_int(row[0]) for row in pending),
        tokens_used=_int(tokens[0]), tokens_reserved=_int(tokens[1]),
    )
