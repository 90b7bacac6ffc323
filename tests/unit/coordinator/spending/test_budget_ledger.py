"""The budget ledger API — reserve, settle, release, record_unknown, acknowledge — on a real store: every
verb writes exact amounts in the caller's transaction, a reservation closes exactly once, an unknown
usage charges the reserved bound and blocks paid calls, and no other module writes the ledger."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeflux.coordinator.spending.ledger import Admission, BudgetLedger, refusal_error
from codeflux.domain.budget import BudgetRefusal, BudgetRefusalKind, LedgerKind, reserve_move
from codeflux.domain.errors import (
    BudgetDecisionNeededError,
    BudgetExhaustedError,
    ConflictError,
    InvalidValueError,
    NotFoundError,
)
from codeflux.domain.ids import TaskId
from codeflux.domain.money import EUR, USD, Cost, Money, UnknownCost
from codeflux.domain.tasks import TaskState
from codeflux.store import money as rows
from codeflux.store.database import Database, Transaction
from codeflux.store.model_requests import ModelRequestPlan, insert_model_request
from codeflux.store.tasks import insert_task

REPO = Path(__file__).resolve().parents[4]
SOURCE_ROOT = REPO / "codeflux"
LEDGER_MODULE = Path("coordinator/spending/ledger.py")
STORE_MODULE = Path("store/money.py")
LEDGER = BudgetLedger(clock=lambda: 7)
UNREPORTED = UnknownCost.because("the provider reported no usage")


def usd(minor: int) -> Money:
    return Money(minor=minor, currency=USD)


def new_task(db: Database, tmp_path: Path, *, limit: int = 1_000, allow_unknown_price: bool = False) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))

    def work(tx: Transaction) -> None:
        # Forecasting: it may call models but holds no run slot, so examples can create many tasks.
        insert_task(tx, task_id=task_id, repository_root=tmp_path / "r", worktree=tmp_path / "w",
                    state=TaskState.FORECASTING)
        rows.insert_budget(tx, task_id=task_id, hard_limit=usd(limit), warning=None, token_limit=None,
                           allow_unknown_price=allow_unknown_price, at_us=1)

    db.write(work)
    return task_id


def plan_request(tx: Transaction, task_id: TaskId, bound: Cost) -> str:
    """The model request row the gateway writes before it reserves (the entries name it)."""
    request_id = f"mreq_{os.urandom(8).hex()}"
    move = reserve_move(bound)
    insert_model_request(tx, ModelRequestPlan(
        request_id=request_id, task_id=task_id, idempotency_key=request_id, request_sha256="0" * 64,
        provider="scripted", base_url=None, model="m", rung="cheap:low", price_snapshot_id=None, currency=USD,
        reserved_minor=move.amount_minor, reserved_reason=move.reason, reserved_tokens=1, max_output_tokens=1,
    ), at_us=1)  # fmt: skip
    return request_id


def reserve(db: Database, task_id: TaskId, bound: Cost) -> str:
    """What the gateway does: check, write the request row, reserve — one transaction; a refusal raises."""

    def work(tx: Transaction) -> str:
        verdict = LEDGER.check(tx, task_id, bound=bound, tokens=1)
        if isinstance(verdict, BudgetRefusal):
            raise refusal_error(task_id, verdict)
        request_id = plan_request(tx, task_id, bound)
        LEDGER.reserve(tx, verdict, request_id=request_id)
        return request_id

    return db.write(work)


def refusal(db: Database, task_id: TaskId, bound: Cost) -> BudgetRefusal | None:
    verdict = db.write(lambda tx: LEDGER.check(tx, task_id, bound=bound, tokens=1))
    return verdict if isinstance(verdict, BudgetRefusal) else None


def entries(db: Database, task_id: TaskId) -> list[tuple[str, int | None]]:
    return [(e.kind, e.amount_minor) for e in db.read(lambda view: rows.budget_entries_of_task(view, task_id))]


# ─── the verbs ───────────────────────────────────────────────────────────────────────────────────


def test_settle_charges_exactly_the_actual_cost_and_releases_the_rest(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path)
    request_id = reserve(db, task_id, usd(100))
    assert db.read(lambda view: LEDGER.summary(view, task_id)).reserved == usd(100)

    moves = db.write(lambda tx: LEDGER.settle(tx, request_id=request_id, actual=usd(37)))

    assert [(m.kind, m.amount_minor) for m in moves] == [(LedgerKind.SETTLE, 37), (LedgerKind.RELEASE, 63)]
    assert entries(db, task_id) == [("reserve", 100), ("settle", 37), ("release", 63)]
    summary = db.read(lambda view: LEDGER.summary(view, task_id))
    assert (summary.spent, summary.reserved, summary.remaining) == (usd(37), usd(0), usd(963))
    assert summary.pending_decisions == ()


def test_a_cost_above_the_reservation_is_settled_in_full_and_its_overrun_blocks_paid_calls(
    db: Database, tmp_path: Path
) -> None:
    task_id = new_task(db, tmp_path)
    request_id = reserve(db, task_id, usd(10))

    db.write(lambda tx: LEDGER.settle(tx, request_id=request_id, actual=usd(15)))

    assert entries(db, task_id) == [("reserve", 10), ("settle", 10), ("overrun", 5)]
    refused = refusal(db, task_id, usd(1))
    assert refused is not None and refused.kind is BudgetRefusalKind.DECISION
    accepted = db.write(lambda tx: LEDGER.acknowledge(tx, task_id=task_id, entry_ids=None, acknowledged_by="user",
                                                      note=None))
    assert len(accepted) == 1
    assert refusal(db, task_id, usd(1)) is None
    assert db.read(lambda view: LEDGER.summary(view, task_id)).spent == usd(15)


def test_release_returns_the_whole_reservation(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path, limit=100)
    request_id = reserve(db, task_id, usd(40))
    before = db.read(lambda view: LEDGER.summary(view, task_id))
    assert (before.reserved, before.remaining, before.open_requests) == (usd(40), usd(60), 1)

    db.write(lambda tx: LEDGER.release(tx, request_id=request_id))

    after = db.read(lambda view: LEDGER.summary(view, task_id))
    assert (after.spent, after.reserved, after.remaining, after.open_requests) == (usd(0), usd(0), usd(100), 0)
    assert entries(db, task_id) == [("reserve", 40), ("release", 40)]


def test_unknown_usage_charges_the_reserved_bound_and_blocks_further_paid_calls(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path)
    request_id = reserve(db, task_id, usd(25))

    moves = db.write(lambda tx: LEDGER.record_unknown(tx, request_id=request_id, unknown=UNREPORTED))

    assert [(m.kind, m.amount_minor) for m in moves] == [(LedgerKind.UNKNOWN_CHARGE, 25)]
    assert moves[0].reason == "charged the reserved bound: the provider reported no usage"
    summary = db.read(lambda view: LEDGER.summary(view, task_id))
    assert (summary.spent, summary.charged_at_bound, summary.charged_at_bound_amount) == (usd(25), 1, usd(25))
    assert len(summary.pending_decisions) == 1
    refused = refusal(db, task_id, usd(1))
    assert refused is not None and refused.kind is BudgetRefusalKind.DECISION
    assert "await acknowledgement" in refused.reason
    with pytest.raises(BudgetDecisionNeededError, match="await acknowledgement"):
        reserve(db, task_id, usd(1))
    assert refusal(db, task_id, usd(0)) is None  # free calls go on


def test_an_unknown_charge_of_an_unknown_bound_stays_unknown_and_only_the_standing_allowance_accepts_it(
    db: Database, tmp_path: Path
) -> None:
    task_id = new_task(db, tmp_path, allow_unknown_price=True)
    unpriced = UnknownCost.because("no price for model m")
    first, second = reserve(db, task_id, unpriced), reserve(db, task_id, unpriced)

    db.write(lambda tx: LEDGER.record_unknown(tx, request_id=first, unknown=UNREPORTED))
    db.write(lambda tx: LEDGER.record_unknown(tx, request_id=second, unknown=UNREPORTED, after_interruption=True))

    assert entries(db, task_id) == [("reserve", None), ("reserve", None), ("unknown-charge", None),
                                    ("unknown-charge", None)]
    summary = db.read(lambda view: LEDGER.summary(view, task_id))
    assert isinstance(summary.spent, UnknownCost) and str(summary.spent).startswith("unknown (")
    assert str(summary.remaining).startswith("unknown (")  # never shown as 0 or as the limit
    charged = [e for e in db.read(lambda view: rows.budget_entries_of_task(view, task_id)) if e.kind != "reserve"]
    assert [e.acknowledged for e in charged] == [True, False]  # a crash's charge waits for a person
    assert summary.pending_decisions == (charged[1].entry_id,)


def test_a_reservation_closes_exactly_once(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path)
    request_id = reserve(db, task_id, usd(10))
    db.write(lambda tx: LEDGER.settle(tx, request_id=request_id, actual=usd(4)))
    written = entries(db, task_id)

    for again in (lambda tx: LEDGER.settle(tx, request_id=request_id, actual=usd(4)),
                  lambda tx: LEDGER.release(tx, request_id=request_id),
                  lambda tx: LEDGER.record_unknown(tx, request_id=request_id, unknown=UNREPORTED)):
        with pytest.raises(ConflictError, match="already closed"):
            db.write(again)

    def reserve_again(tx: Transaction) -> None:
        admission = LEDGER.check(tx, task_id, bound=usd(1), tokens=1)
        assert not isinstance(admission, BudgetRefusal)
        LEDGER.reserve(tx, admission, request_id=request_id)

    with pytest.raises(ConflictError, match="already has a reservation"):
        db.write(reserve_again)
    assert entries(db, task_id) == written
    assert db.read(lambda view: LEDGER.summary(view, task_id)).spent == usd(4)  # charged once


def test_closing_what_was_never_reserved_is_refused(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path)
    request_id = db.write(lambda tx: plan_request(tx, task_id, usd(1)))

    with pytest.raises(NotFoundError):
        db.write(lambda tx: LEDGER.release(tx, request_id=request_id))
    assert entries(db, task_id) == []


def test_reserve_refuses_a_bound_that_does_not_fit_and_writes_nothing(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path, limit=100)
    reserve(db, task_id, usd(60))

    with pytest.raises(BudgetExhaustedError):
        reserve(db, task_id, usd(41))  # 60 + 41 > 100
    with pytest.raises(BudgetDecisionNeededError, match="cannot be bounded"):
        reserve(db, task_id, UnknownCost.because("no price for model m"))
    assert entries(db, task_id) == [("reserve", 60)]
    reserve(db, task_id, usd(40))  # exactly what is left
    assert db.read(lambda view: LEDGER.summary(view, task_id)).remaining == usd(0)


def test_an_admission_is_good_for_one_reservation_in_the_transaction_that_checked_it(
    db: Database, tmp_path: Path
) -> None:
    task_id = new_task(db, tmp_path, limit=100)
    stale = db.write(lambda tx: LEDGER.check(tx, task_id, bound=usd(60), tokens=1))
    assert not isinstance(stale, BudgetRefusal)
    reserve(db, task_id, usd(60))  # the budget moved since

    def reserve_with_stale(tx: Transaction) -> None:
        LEDGER.reserve(tx, stale, request_id=plan_request(tx, task_id, usd(60)))

    with pytest.raises(ConflictError, match="transaction that checked it"):
        db.write(reserve_with_stale)

    def reserve_twice(tx: Transaction) -> None:
        admission = LEDGER.check(tx, task_id, bound=usd(30), tokens=1)
        assert not isinstance(admission, BudgetRefusal)
        LEDGER.reserve(tx, admission, request_id=plan_request(tx, task_id, usd(30)))
        LEDGER.reserve(tx, admission, request_id=plan_request(tx, task_id, usd(30)))  # 60 + 30 + 30 > 100

    with pytest.raises(ConflictError, match="one reservation"):
        db.write(reserve_twice)
    assert entries(db, task_id) == [("reserve", 60)]


def test_a_verb_writes_in_the_callers_transaction(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path)
    request_id = reserve(db, task_id, usd(10))

    class Abandoned(Exception):
        pass

    def work(tx: Transaction) -> None:
        LEDGER.settle(tx, request_id=request_id, actual=usd(3))
        raise Abandoned  # the outcome's other writes failed: the settlement must not survive alone

    with pytest.raises(Abandoned):
        db.write(work)
    assert entries(db, task_id) == [("reserve", 10)]
    db.write(lambda tx: LEDGER.release(tx, request_id=request_id))  # still open, so it can close
    assert entries(db, task_id) == [("reserve", 10), ("release", 10)]


def test_a_settlement_in_another_currency_is_refused(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path)
    request_id = reserve(db, task_id, usd(10))

    with pytest.raises(InvalidValueError, match="EUR"):
        db.write(lambda tx: LEDGER.settle(tx, request_id=request_id, actual=Money(minor=3, currency=EUR)))
    assert entries(db, task_id) == [("reserve", 10)]


def test_only_pending_charges_can_be_acknowledged(db: Database, tmp_path: Path) -> None:
    task_id = new_task(db, tmp_path)
    request_id = reserve(db, task_id, usd(10))
    db.write(lambda tx: LEDGER.settle(tx, request_id=request_id, actual=usd(3)))
    settle_entry = db.read(lambda view: rows.budget_entries_of_task(view, task_id))[1].entry_id

    with pytest.raises(InvalidValueError, match="not a pending charge"):
        db.write(lambda tx: LEDGER.acknowledge(tx, task_id=task_id, entry_ids=[settle_entry],
                                               acknowledged_by="user", note=None))


@dataclass(frozen=True)
class Call:
    bound: int
    actual: int | None  # None: the usage is unknown
    sent: bool


CALLS = st.lists(st.builds(Call, bound=st.integers(0, 10**9), actual=st.one_of(st.none(), st.integers(0, 2 * 10**9)),
                           sent=st.booleans()), max_size=8)  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=CALLS)
def test_the_figures_are_exactly_the_sum_of_what_each_verb_charged(
    db: Database, tmp_path: Path, calls: list[Call]
) -> None:
    limit = 10**12
    task_id = new_task(db, tmp_path, limit=limit)
    charged = 0
    for call in calls:
        request_id = reserve(db, task_id, usd(call.bound))

        def close(tx: Transaction, call: Call = call, request_id: str = request_id) -> None:
            if not call.sent:
                LEDGER.release(tx, request_id=request_id)
            elif call.actual is None:
                LEDGER.record_unknown(tx, request_id=request_id, unknown=UNREPORTED)
            else:
                LEDGER.settle(tx, request_id=request_id, actual=usd(call.actual))
            # an overrun or unknown charge blocks the next paid call until a person accepts it
            LEDGER.acknowledge(tx, task_id=task_id, entry_ids=None, acknowledged_by="user", note=None)

        db.write(close)
        charged += 0 if not call.sent else call.bound if call.actual is None else call.actual

    summary = db.read(lambda view: LEDGER.summary(view, task_id))
    assert (summary.spent, summary.reserved, summary.open_requests) == (usd(charged), usd(0), 0)
    assert summary.remaining == usd(limit - charged)


# ─── guard rails ─────────────────────────────────────────────────────────────────────────────────

_LEDGER_WRITES = frozenset({"insert_budget_entry", "insert_acknowledgement"})
_LEDGER_SQL = re.compile(r"\b(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM|REPLACE\s+INTO)\s+"
                         r"(budget_entries|budget_acknowledgements)\b", re.IGNORECASE)


def ledger_writes(source: str) -> list[int]:
    """Lines of ``source`` that call a store function writing ledger entries or acknowledgements."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in _LEDGER_WRITES:
                found.append(node.lineno)
    return found


def test_the_budget_ledger_has_one_writer() -> None:
    callers, sql = {}, {}
    for path in sorted(SOURCE_ROOT.rglob("*.py")):
        where = path.relative_to(SOURCE_ROOT)
        source = path.read_text()
        if lines := ledger_writes(source):
            callers[where] = lines
        if _LEDGER_SQL.search(source):
            sql[where] = True

    assert set(callers) == {LEDGER_MODULE}, f"only {LEDGER_MODULE} may write ledger entries: {callers}"
    assert set(sql) == {STORE_MODULE}, f"only {STORE_MODULE} may hold the ledger's write SQL: {sorted(sql)}"


def test_the_one_writer_scan_sees_calls_through_a_module_alias_and_by_name() -> None:
    source = "from x import insert_budget_entry\nrows.insert_acknowledgement(tx)\ninsert_budget_entry(tx)\n"
    assert ledger_writes(source) == [2, 3]
    assert _LEDGER_SQL.search('tx.execute("insert into budget_entries (id) values (1)")')
    assert _LEDGER_SQL.search("UPDATE budget_acknowledgements SET note = 1")
    assert not _LEDGER_SQL.search("SELECT id FROM budget_entries")


MONEY_MODULES = [
    "codeflux/domain/budget.py", "codeflux/store/money.py", "codeflux/store/prices.py",
    "codeflux/store/model_requests.py", "codeflux/coordinator/spending/budget.py",
    "codeflux/coordinator/spending/ledger.py", "codeflux/coordinator/spending/prices.py",
    "codeflux/coordinator/spending/gateway.py", "codeflux/cli/prices.py", "codeflux/cli/budget.py",
]  # fmt: skip


@pytest.mark.parametrize("path", MONEY_MODULES)
def test_no_float_takes_part_in_budget_or_gateway_money(path: str) -> None:
    source = (REPO / path).read_text()
    code = re.sub(r"#.*", "", re.sub(r'("""|\'\'\')[\s\S]*?\1|"[^"\n]*"|\'[^\'\n]*\'', '""', source))
    assert "float" not in code
    assert re.search(r"(?<![\w.])\d+\.\d+(?![\w.])", code) is None, "a float literal"


def test_a_check_takes_the_summary_its_caller_read_of_that_task_only(db: Database, tmp_path: Path) -> None:
    """The gateway reads the budget once per call and hands it to the check; another task's summary is refused."""
    task_id, other = new_task(db, tmp_path, limit=10), new_task(db, tmp_path, limit=1_000)
    reserve(db, task_id, usd(8))

    def check(summary_of: TaskId) -> Admission | BudgetRefusal:
        return db.write(lambda tx: LEDGER.check(tx, task_id, bound=usd(5), tokens=1,
                                                summary=LEDGER.summary(tx, summary_of)))

    verdict = check(task_id)
    assert isinstance(verdict, BudgetRefusal)
    assert verdict.kind is BudgetRefusalKind.EXHAUSTED
    with pytest.raises(InvalidValueError):
        check(other)
