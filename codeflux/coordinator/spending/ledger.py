"""The budget ledger's one writer: check and reserve before a paid call, close each reservation exactly
once — :meth:`~BudgetLedger.settle`, :meth:`~BudgetLedger.release` or :meth:`~BudgetLedger.record_unknown`
— and acknowledge the charges that wait for a person.

:meth:`~BudgetLedger.reserve` takes only an :class:`Admission`, which :meth:`~BudgetLedger.check` hands
out when the call fits the budget and which is good in that transaction only: a reservation is never
granted that takes the known spend and reservations past the hard limit, and the budget is read once.

Every verb works inside the caller's transaction, so the model request row, its ledger entries and the
events of one outcome commit together (the gateway journals; the ledger only keeps the books). The rules
are :mod:`codeflux.domain.budget`; the SQL is :mod:`codeflux.store.money`. No other module writes a
ledger entry or an acknowledgement (``tests/unit/coordinator/spending/test_budget_ledger.py``).

A closing verb reads the reservation from the ledger itself, never from its caller: what is settled,
released or charged is always what was reserved. Closing a reservation that is already closed is a
:class:`~codeflux.domain.errors.ConflictError` (and the schema's triggers refuse it too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from codeflux.domain.budget import (
    BudgetRefusal,
    BudgetRefusalCause,
    BudgetRefusalKind,
    BudgetSummary,
    LedgerKind,
    LedgerMove,
    check_paid_call,
    closing_moves,
    reserve_move,
    summarize_budget,
)
from codeflux.domain.errors import (
    BudgetDecisionNeededError,
    BudgetExhaustedError,
    CodefluxError,
    ConflictError,
    InvalidValueError,
    NotFoundError,
)
from codeflux.domain.ids import TaskId
from codeflux.domain.money import Cost, Currency, Money, UnknownCost
from codeflux.store import money as rows
from codeflux.store.database import ReadView, Transaction, now_us

__all__ = [
    "Admission",
    "BudgetLedger",
    "acknowledge_command",
    "price_set_command",
    "read_budget_summary",
    "refusal_error",
]

_STANDING_ALLOWANCE: Final = "standing-allowance"


def read_budget_summary(view: ReadView, task_id: TaskId) -> BudgetSummary:
    """The task's budget figures from its stored ledger (:class:`NotFoundError` without a budget): one read of the
    budget and its running total."""
    found = rows.budget_and_totals(view, task_id)
    if found is None:
        raise NotFoundError(kind="budget of task", entity_id=task_id.value)
    return summarize_budget(*found)


def price_set_command(*, provider: str, model: str, currency: str = "USD", cache_rates: bool = False) -> str:
    """The exact command that records a price for ``model`` of ``provider``; the rates (``R``, per million
    tokens) are left for the person, who knows what the provider charges. ``cache_rates``: the calls write a
    prompt cache, so the command names the cache-read and cache-write rates too."""
    cache = " --cache-read R --cache-write R" if cache_rates else ""
    return (f"codeflux prices set --provider {provider} --model {model} --input R --output R{cache} "
            f"--currency {currency}")


def acknowledge_command(task_id: TaskId) -> str:
    """The exact command that accepts a task's pending charges (all of them; ``--entry ID`` picks some)."""
    return f"codeflux budget acknowledge --task {task_id}"


def refusal_error(
    task_id: TaskId, refusal: BudgetRefusal, *, provider: str | None = None, model: str | None = None,
    currency: str = "USD", cache_rates: bool = False,
) -> CodefluxError:  # fmt: skip
    """The error a budget refusal raises: the hard limit reached, or a decision for a person. A decision's
    message names the exact command that makes it: ``budget acknowledge`` for pending charges, and, when the
    call's ``provider`` and ``model`` are given, ``prices set`` for an unknown price (with the cache rates
    when ``cache_rates``: the call writes a prompt cache)."""
    if refusal.kind is BudgetRefusalKind.EXHAUSTED:
        return BudgetExhaustedError(task_id=task_id.value, reason=refusal.reason)
    reason = refusal.reason
    if refusal.cause is BudgetRefusalCause.PENDING_DECISIONS:
        reason = (f"{reason}; accept them with `{acknowledge_command(task_id)}`, then continue with "
                  f"`codeflux task resume {task_id}`")
    elif refusal.cause is BudgetRefusalCause.UNKNOWN_PRICE and provider is not None and model is not None:
        command = price_set_command(provider=provider, model=model, currency=currency, cache_rates=cache_rates)
        reason = (f"{reason}; record the model's rates with `{command}` (R per million tokens, "
                  f"0 for a free local model) or allow unknown-price calls for this task (`codeflux budget set --task "
                  f"{task_id} --limit AMOUNT --allow-unknown-price`), then continue with `codeflux task resume "
                  f"{task_id}`")
    elif refusal.cause is BudgetRefusalCause.UNKNOWN_PRICE:
        reason = f"{reason}; set a price or allow unknown-price calls for this task"
    return BudgetDecisionNeededError(task_id=task_id.value, reason=reason)


class Admission:
    """The budget let a call reserving ``bound`` start: what :meth:`BudgetLedger.reserve` takes, for one
    reservation, in the transaction that checked it (later, the budget may have moved)."""

    __slots__ = ("_transaction", "_used", "bound", "currency", "task_id")

    def __init__(self, *, task_id: TaskId, bound: Cost, currency: Currency, transaction: Transaction) -> None:
        self.task_id = task_id
        self.bound = bound
        self.currency = currency
        self._transaction = transaction
        self._used = False

    def consume(self, tx: Transaction) -> None:
        """Use the admission for its one reservation in ``tx``; :class:`ConflictError` if it cannot be."""
        if tx is not self._transaction:
            raise ConflictError("a budget admission is good only in the transaction that checked it")
        if self._used:
            raise ConflictError("a budget admission is good for one reservation")
        self._used = True


class BudgetLedger:
    """Reserve, settle, release, record an unknown charge, acknowledge — see the module docstring.
    ``clock`` gives UTC microseconds for the entries."""

    def __init__(self, *, clock: Callable[[], int] = now_us) -> None:
        self._clock = clock

    def summary(self, view: ReadView, task_id: TaskId) -> BudgetSummary:
        return read_budget_summary(view, task_id)

    def check(
        self, tx: Transaction, task_id: TaskId, *, bound: Cost, tokens: int, summary: BudgetSummary | None = None
    ) -> Admission | BudgetRefusal:
        """Whether a call reserving ``bound`` and up to ``tokens`` tokens may start now: an
        :class:`Admission` to reserve with, or why not. Writes nothing: the caller records a refusal (and
        pauses the task) in its own transaction. ``summary``: the task's budget as the caller read it in ``tx``
        (:meth:`summary`; read here when not given)."""
        if summary is None:
            summary = read_budget_summary(tx, task_id)
        elif summary.task_id != task_id:
            raise InvalidValueError(kind="budget check", reason="the summary given is another task's")
        refusal = check_paid_call(summary, bound=bound, tokens=tokens)
        if refusal is not None:
            return refusal
        return Admission(task_id=task_id, bound=bound, currency=summary.hard_limit.currency, transaction=tx)

    def reserve(self, tx: Transaction, admission: Admission, *, request_id: str) -> LedgerMove:
        """Reserve the admitted bound for the model request ``request_id``, whose row the caller wrote in
        this transaction. An admission from another transaction, or used already, is refused."""
        if rows.has_budget_entries(tx, request_id):
            raise ConflictError(f"model request {request_id} already has a reservation")
        admission.consume(tx)
        move = reserve_move(admission.bound)
        rows.insert_budget_entry(tx, task_id=admission.task_id, request_id=request_id, kind=move.kind,
                                 amount_minor=move.amount_minor, currency=admission.currency, reason=move.reason,
                                 at_us=self._clock())  # fmt: skip
        return move

    def settle(self, tx: Transaction, *, request_id: str, actual: Money) -> tuple[LedgerMove, ...]:
        """Charge the priced usage ``actual``: settle it and release the rest of the reservation; above the
        reservation, settle the reservation and record the excess as an overrun, which blocks paid calls
        until a person acknowledges it."""
        reservation = self._open_reservation(tx, request_id)
        if actual.currency != reservation.currency:
            raise InvalidValueError(kind="settlement", reason=f"the budget is in {reservation.currency.code}, "
                                                              f"the cost in {actual.currency.code}")
        moves = closing_moves(reserved_minor=reservation.amount_minor, actual=actual)
        self._append(tx, reservation, moves)
        return moves

    def release(self, tx: Transaction, *, request_id: str) -> tuple[LedgerMove, ...]:
        """Give the whole reservation back: nothing was sent, so nothing can have been billed."""
        reservation = self._open_reservation(tx, request_id)
        moves = closing_moves(reserved_minor=reservation.amount_minor, actual=None)
        self._append(tx, reservation, moves)
        return moves

    def record_unknown(
        self, tx: Transaction, *, request_id: str, unknown: UnknownCost, after_interruption: bool = False
    ) -> tuple[LedgerMove, ...]:
        """The call may have been billed and the amount is unknown: charge the reserved bound as an unknown
        charge (unknown itself when the bound was), which blocks further paid calls until acknowledged.

        A charge of unknown amount under the person's standing allowance for unknown prices is accepted by
        that allowance — except ``after_interruption``: a call cut off by a crash always waits for a person.
        """
        reservation = self._open_reservation(tx, request_id)
        moves = closing_moves(reserved_minor=reservation.amount_minor, actual=unknown)
        entries = self._append(tx, reservation, moves)
        allowance = rows.require_budget(tx, reservation.task_id).allow_unknown_price
        if allowance and not after_interruption:
            at = self._clock()
            for entry, move in zip(entries, moves, strict=True):
                if move.kind is LedgerKind.UNKNOWN_CHARGE and move.amount_minor is None:
                    rows.insert_acknowledgement(tx, task_id=reservation.task_id, entry_id=entry,
                                                acknowledged_by=_STANDING_ALLOWANCE, note=None, at_us=at)
        return moves

    def acknowledge(
        self, tx: Transaction, *, task_id: TaskId, entry_ids: Sequence[int] | None, acknowledged_by: str,
        note: str | None,
    ) -> tuple[int, ...]:  # fmt: skip
        """Accept overruns and unknown charges (every pending one when ``entry_ids`` is None) so paid calls
        may go on; returns the entries accepted. One that is not a pending charge of the task is refused."""
        pending = rows.ledger_totals(tx, task_id).pending_decisions
        chosen = pending if entry_ids is None else tuple(entry_ids)
        unknown = [entry for entry in chosen if entry not in pending]
        if unknown:
            raise InvalidValueError(kind="acknowledgement",
                                    reason=f"ledger entry {unknown[0]} is not a pending charge of this task")
        at = self._clock()
        for entry in chosen:
            rows.insert_acknowledgement(tx, task_id=task_id, entry_id=entry, acknowledged_by=acknowledged_by,
                                        note=note, at_us=at)
        return chosen

    # ─── the books ───────────────────────────────────────────────────────────────────────────────

    def _open_reservation(self, view: ReadView, request_id: str) -> rows.LedgerEntryRow:
        entries = rows.budget_entries_of_request(view, request_id)
        reservation = next((entry for entry in entries if entry.kind is LedgerKind.RESERVE), None)
        if reservation is None:
            raise NotFoundError(kind="reservation of model request", entity_id=request_id)
        if len(entries) > 1:
            raise ConflictError(f"the reservation of model request {request_id} is already closed; "
                                "a reservation closes exactly once")
        return reservation

    def _append(
        self, tx: Transaction, reservation: rows.LedgerEntryRow, moves: Sequence[LedgerMove]
    ) -> list[int]:
        at = self._clock()
        return [
            rows.insert_budget_entry(tx, task_id=reservation.task_id, request_id=reservation.request_id,
                                     kind=move.kind, amount_minor=move.amount_minor,
                                     currency=reservation.currency, reason=move.reason, at_us=at)
            for move in moves
        ]  # fmt: skip
