"""The stored budget ledger: its aggregates equal the sum of the calls recorded, and its schema refuses a
second closing of a reservation, a settlement that does not add up, any change or deletion of an entry,
and any floating-point money column."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeflux.domain.budget import LedgerKind, closing_moves, summarize_budget
from codeflux.domain.errors import StoreError
from codeflux.domain.ids import TaskId
from codeflux.domain.model_calls import ModelCallErrorKind, ModelRequestState
from codeflux.domain.money import USD, Cost, Money, UnknownCost
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.tasks import TaskState
from codeflux.store import money as ledger
from codeflux.store.database import Database, Transaction
from codeflux.store.location import DataLocation
from codeflux.store.migrations import load_shipped_migrations, migrate_database
from codeflux.store.model_requests import (
    ModelRequestEnd,
    ModelRequestPlan,
    insert_model_request,
    record_model_request_end,
)
from codeflux.store.tasks import insert_task

REPO = Path(__file__).resolve().parents[3]
AMOUNTS = st.integers(min_value=0, max_value=10**12)
ACTUALS = st.one_of(
    st.none(), st.builds(lambda minor: Money(minor=minor, currency=USD), AMOUNTS),
    st.just(UnknownCost.because("usage not reported")),
)  # fmt: skip
CHARGES = (LedgerKind.SETTLE, LedgerKind.OVERRUN, LedgerKind.UNKNOWN_CHARGE)


@dataclass(frozen=True)
class Call:
    reserved: int | None
    outcome: Cost | None  # None: nothing sent
    closed: bool


CALLS = st.lists(
    st.builds(
        Call,
        reserved=st.one_of(st.none(), st.integers(0, 10**9)),
        outcome=ACTUALS,
        closed=st.booleans(),
    ),
    max_size=12,
)


def new_task(db: Database, tmp_path: Path) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))

    def work(tx: Transaction) -> None:
        # Forecasting: it may call models but holds no run slot, so examples can create many tasks.
        insert_task(tx, task_id=task_id, repository_root=tmp_path / "r", worktree=tmp_path / "w",
                    state=TaskState.FORECASTING)
        ledger.insert_budget(tx, task_id=task_id, hard_limit=Money(minor=10**15, currency=USD), warning=None,
                             token_limit=None, allow_unknown_price=True, at_us=1)

    db.write(work)
    return task_id


def record(db: Database, task_id: TaskId, index: int, call: Call) -> None:
    request_id = f"mreq_{index:08d}{os.urandom(8).hex()}"

    def work(tx: Transaction) -> None:
        plan = ModelRequestPlan(
            request_id=request_id, task_id=task_id, idempotency_key=request_id, request_sha256="0" * 64,
            provider="scripted", base_url=None, model="m", rung="cheap:low", price_snapshot_id=None, currency=USD,
            reserved_minor=call.reserved, reserved_reason=None if call.reserved is not None else "no price",
            reserved_tokens=1, max_output_tokens=1,
        )
        insert_model_request(tx, plan, at_us=1)
        ledger.insert_budget_entry(tx, task_id=task_id, request_id=request_id, kind=LedgerKind.RESERVE,
                                   amount_minor=call.reserved, currency=USD, reason=plan.reserved_reason, at_us=1)
        if call.closed:
            for move in closing_moves(reserved_minor=call.reserved, actual=call.outcome):
                ledger.insert_budget_entry(tx, task_id=task_id, request_id=request_id, kind=move.kind,
                                           amount_minor=move.amount_minor, currency=USD, reason=move.reason, at_us=1)

    db.write(work)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=CALLS)
def test_the_stored_ledger_totals_equal_the_sum_of_the_calls(db: Database, tmp_path: Path, calls: list[Call]) -> None:
    task_id = new_task(db, tmp_path)
    for index, call in enumerate(calls):
        record(db, task_id, index, call)

    summary = db.read(lambda view: summarize_budget(ledger.require_budget(view, task_id),
                                                    ledger.ledger_totals(view, task_id)))

    open_calls = [c for c in calls if not c.closed]
    expected_reserved = sum(c.reserved or 0 for c in open_calls)
    charges = [m for c in calls if c.closed for m in closing_moves(reserved_minor=c.reserved, actual=c.outcome)
               if m.kind in CHARGES]
    assert summary.reserved_known == Money(minor=expected_reserved, currency=USD)
    assert summary.spent_known == Money(minor=sum(m.amount_minor or 0 for m in charges), currency=USD)
    assert summary.open_requests == len(open_calls)
    unknown_spent = any(m.amount_minor is None for m in charges)
    unknown_reserved = any(c.reserved is None for c in open_calls)
    assert isinstance(summary.spent, UnknownCost) is unknown_spent
    assert isinstance(summary.reserved, UnknownCost) is unknown_reserved
    # known + unknown stays unknown, and is never shown as a number alone
    assert isinstance(summary.remaining, UnknownCost) is (unknown_spent or unknown_reserved)
    if isinstance(summary.remaining, Money):
        assert summary.remaining == summary.hard_limit - summary.spent_known - summary.reserved_known
    else:
        assert str(summary.remaining).startswith("unknown (")


def test_the_store_refuses_to_close_a_reservation_twice(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path)
    record(db, task_id, 1, Call(reserved=10, outcome=Money(minor=4, currency=USD), closed=True))
    request_id = db.read(lambda view: ledger.budget_entries_of_task(view, task_id))[0].request_id

    for kind, amount in (("settle", 4), ("release", 6), ("unknown-charge", 10), ("overrun", 1)):
        with pytest.raises(StoreError):
            db.write(lambda tx, kind=kind, amount=amount: ledger.insert_budget_entry(
                tx, task_id=task_id, request_id=request_id, kind=LedgerKind(kind), amount_minor=amount, currency=USD,
                reason="again", at_us=2))
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("UPDATE budget_entries SET amount_minor = 0"))
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("DELETE FROM budget_entries"))


def test_the_store_refuses_a_settlement_above_the_reservation_and_a_release_that_does_not_add_up(
    db: Database, tmp_path: Path
) -> None:
    task_id = new_task(db, tmp_path)
    record(db, task_id, 1, Call(reserved=10, outcome=None, closed=False))
    request_id = db.read(lambda view: ledger.budget_entries_of_task(view, task_id))[0].request_id

    def add(kind: str, amount: int | None) -> None:
        db.write(lambda tx: ledger.insert_budget_entry(tx, task_id=task_id, request_id=request_id,
                                                       kind=LedgerKind(kind), amount_minor=amount, currency=USD,
                                                       reason="r", at_us=2))

    with pytest.raises(StoreError):
        add("settle", 11)  # above the reservation: must be settle 10 + overrun 1
    with pytest.raises(StoreError):
        add("unknown-charge", 9)  # an unknown charge is exactly the bound
    add("settle", 7)
    with pytest.raises(StoreError):
        add("release", 2)  # 7 + 2 is not 10
    add("release", 3)


def test_the_money_schema_has_no_real_column() -> None:
    schema = re.sub(r"--.*", "", (REPO / "migrations" / "000003_money.sql").read_text())
    assert re.search(r"\b(REAL|FLOAT|DOUBLE|NUMERIC|DECIMAL)\b", schema, flags=re.IGNORECASE) is None
    assert schema.count(" INTEGER") > 40


def test_an_ended_model_request_cannot_change(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path)
    record(db, task_id, 1, Call(reserved=5, outcome=None, closed=False))
    request_id = db.read(lambda view: ledger.budget_entries_of_task(view, task_id))[0].request_id
    db.write(lambda tx: tx.execute("UPDATE model_requests SET state = 'failed', cost_minor = 0, cost_known = 1,"
                                   " error_kind = 'interrupted-before-sending', finished_at_us = 2 WHERE id = ?",
                                   (request_id,)))

    for change in ("state = 'in-flight', started_at_us = 3, finished_at_us = NULL, error_kind = NULL,"
                   " cost_minor = NULL, cost_known = 0", "cost_minor = 1", "reserved_minor = 0"):
        with pytest.raises(StoreError):
            db.write(lambda tx, change=change: tx.execute(
                f"UPDATE model_requests SET {change} WHERE id = ?", (request_id,)))  # noqa: S608
    with pytest.raises(StoreError):
        db.write(lambda tx: tx.execute("DELETE FROM model_requests"))


# ─── the running total (budget_totals, migration 000019) ───────────────────────────────────────────────

USAGES = st.one_of(
    st.builds(TokenUsage, input_tokens=st.integers(0, 10**6), output_tokens=st.integers(0, 10**6),
              cache_read_tokens=st.integers(0, 10**6), cache_write_tokens=st.integers(0, 10**6)),
    st.builds(TokenUsage, input_tokens=st.none() | st.integers(0, 10**6), output_tokens=st.none() | st.integers(0, 9)),
)


@dataclass(frozen=True)
class Step:
    call: Call
    end: str  # "open": the request stays planned; "before"/"after": it ends before/after its closing entries
    usage: TokenUsage
    acknowledge: bool
    tokens: int


STEPS = st.lists(st.builds(Step, call=st.builds(Call, reserved=st.one_of(st.none(), st.integers(0, 10**9)),
                                                 outcome=ACTUALS, closed=st.booleans()),
                           end=st.sampled_from(("open", "before", "after")), usage=USAGES, acknowledge=st.booleans(),
                           tokens=st.integers(1, 10**6)), max_size=10)


def record_step(db: Database, task_id: TaskId, index: int, step: Step, *, schema_000018: bool = False) -> None:
    """One request with every way the ledger moves: reserve, maybe close (its request ended before or after the
    closing entries, with full or partial usage), maybe acknowledge its charges. ``schema_000018``: the request ends
    as the code of that schema wrote it (no column of a later migration)."""
    request_id = f"mreq_{index:08d}{os.urandom(8).hex()}"
    call = step.call

    def end(tx: Transaction) -> None:
        if schema_000018:
            usage = step.usage
            tx.execute("UPDATE model_requests SET state = 'failed', input_tokens = ?, output_tokens = ?,"
                       " cache_read_tokens = ?, cache_write_tokens = ?, reasoning_tokens = ?, cost_reason = 'r',"
                       " error_kind = 'provider-error', finished_at_us = 2 WHERE id = ?",
                       (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
                        usage.reasoning_tokens, request_id))
            return
        record_model_request_end(tx, request_id=request_id, at_us=2, end=ModelRequestEnd(
            state=ModelRequestState.FAILED, usage=step.usage, cost_minor=None, cost_reason="r",
            error_kind=ModelCallErrorKind.PROVIDER_ERROR))

    def work(tx: Transaction) -> None:
        plan = ModelRequestPlan(
            request_id=request_id, task_id=task_id, idempotency_key=request_id, request_sha256="0" * 64,
            provider="scripted", base_url=None, model="m", rung="cheap:low", price_snapshot_id=None, currency=USD,
            reserved_minor=call.reserved, reserved_reason=None if call.reserved is not None else "no price",
            reserved_tokens=step.tokens, max_output_tokens=1,
        )
        insert_model_request(tx, plan, at_us=1)
        ledger.insert_budget_entry(tx, task_id=task_id, request_id=request_id, kind=LedgerKind.RESERVE,
                                   amount_minor=call.reserved, currency=USD, reason=plan.reserved_reason, at_us=1)
        if step.end == "before":
            end(tx)
        entries = []
        if call.closed:
            for move in closing_moves(reserved_minor=call.reserved, actual=call.outcome):
                entries.append((move.kind, ledger.insert_budget_entry(
                    tx, task_id=task_id, request_id=request_id, kind=move.kind, amount_minor=move.amount_minor,
                    currency=USD, reason=move.reason, at_us=1)))
        if step.end == "after":
            end(tx)
        for kind, entry in entries:
            if step.acknowledge and kind in (LedgerKind.OVERRUN, LedgerKind.UNKNOWN_CHARGE):
                ledger.insert_acknowledgement(tx, task_id=task_id, entry_id=entry, acknowledged_by="user", note=None,
                                              at_us=3)

    db.write(work)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_the_running_total_equals_the_ledger_summed(db: Database, tmp_path: Path, steps: list[Step]) -> None:
    task_id = new_task(db, tmp_path)
    other = new_task(db, tmp_path)  # another task's ledger moves nothing of this one
    record_step(db, other, 0, Step(call=Call(reserved=3, outcome=UnknownCost.because("x"), closed=True), end="after",
                                   usage=TokenUsage(), acknowledge=False, tokens=5))
    for index, step in enumerate(steps, start=1):
        record_step(db, task_id, index, step)
        running, recounted = db.read(lambda view: (ledger.ledger_totals(view, task_id),
                                                   ledger.recount_ledger_totals(view, task_id)))
        assert running == recounted


def test_the_migration_counts_the_ledger_written_before_it(tmp_path: Path) -> None:
    """A database with a ledger at schema 000018 gets running totals equal to that ledger once migrated."""
    shipped = load_shipped_migrations()
    location = DataLocation(directory=tmp_path / "data")
    migrate_database(location, migrations=tuple(m for m in shipped if m.version <= 18))
    db = Database.open(location.database)
    try:
        task_id = new_task(db, tmp_path)
        steps = [Step(call=Call(reserved=r, outcome=o, closed=c), end=e, usage=u, acknowledge=a, tokens=7)
                 for r, o, c, e, u, a in (
                     (10, Money(minor=4, currency=USD), True, "after", TokenUsage(input_tokens=1, output_tokens=2,
                                                                                  cache_read_tokens=0,
                                                                                  cache_write_tokens=0), False),
                     (10, Money(minor=14, currency=USD), True, "before", TokenUsage(), False),
                     (None, UnknownCost.because("no price"), True, "after", TokenUsage(), True),
                     (8, None, False, "open", TokenUsage(), False))]
        for index, step in enumerate(steps):
            record_step(db, task_id, index, step, schema_000018=True)
        before = db.read(lambda view: ledger.recount_ledger_totals(view, task_id))
    finally:
        db.close()
    migrate_database(location, migrations=shipped)
    db = Database.open(location.database)
    try:
        running = db.read(lambda view: ledger.ledger_totals(view, task_id))
    finally:
        db.close()
    assert running == before
    assert (running.open_requests, running.spent_minor, len(running.pending_decisions)) == (1, 18, 1)
