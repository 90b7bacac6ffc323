"""`codeflux budget show|set|acknowledge|resume|stop`, driven against a ledger filled by real gateway calls
to the scripted provider (not a model), with a user price recorded for it."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from codeflux.cli.main import main
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.coordinator.tasks.recovery import shared_running_lock
from codeflux.domain.errors import BudgetDecisionNeededError, ModelCallRefusedError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest
from codeflux.domain.money import USD, Money
from codeflux.domain.pricing import Price, TokenUsage
from codeflux.domain.tasks import TaskState
from codeflux.providers.scripted import ScriptedAdapter, ScriptedTurn
from codeflux.store.database import Database
from codeflux.store.events import read_events_after
from codeflux.store.location import DataLocation
from codeflux.store.tasks import insert_task, require_task, task_session_id

REQUEST = ModelRequest(model="x", system="", messages=(Message.user_text("hi"),), max_output_tokens=100)
KNOWN = TokenUsage(input_tokens=10, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0)


def budget(capsys: pytest.CaptureFixture[str], location: DataLocation, *argv: str) -> tuple[int, str, str]:
    """``codeflux budget ARGV`` while this test's gateway stands for a run in progress: like a real run's
    process, it holds the shared running lock, so the command's startup recovery leaves the task alone."""
    with shared_running_lock(location):
        code = main(["--data-dir", str(location.directory), "budget", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def setup(db: Database, tmp_path: Path, turns: list[ScriptedTurn]) -> tuple[TaskId, ModelGateway]:
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "r", worktree=tmp_path / "w",
                                    state=TaskState.RUNNING))
    # $100,000 per million input tokens is 10 cents a token; output is free. The request is 42 input tokens by
    # the gateway's estimate, so each call reserves 420 cents and 10 reported input tokens cost 100 cents.
    PriceCatalog(db).set_user_price(provider="scripted", model="scripted-cheap", effective_date=dt.date(2026, 1, 1),
                                    price=Price.from_per_million_tokens(currency=USD, input_per_million="100000.00",
                                                                        output_per_million="0"))
    route = ModelRoute(provider="scripted", adapter=ScriptedAdapter(turns), cheap_model="scripted-cheap",
                       capable_model="scripted-capable")
    return task_id, ModelGateway(db, [route])


def test_set_show_acknowledge_and_resume_from_the_cli(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_id, gateway = setup(db, tmp_path, [ScriptedTurn(text="a", usage=KNOWN), ScriptedTurn(text="b"),
                                            ScriptedTurn(text="c", usage=KNOWN)])
    code, out, err = budget(capsys, data_location, "set", "--task", task_id.value, "--limit", "20.00",
                            "--warning", "1.00")
    assert code == 0, err
    assert "  hard limit   $20.00   warning at $1.00" in out

    first = gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="1")
    assert first.charged == Money(minor=100, currency=USD)
    events = db.read(lambda view: read_events_after(view, session_id=task_session_id(task_id), after_sequence=0,
                                                    limit=100))
    assert [event.kind for event in events].count("budget-warning") == 1

    second = gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="2")  # no usage
    assert second.charged == second.reserved == Money(minor=420, currency=USD) and second.budget.pending_decisions
    with pytest.raises(BudgetDecisionNeededError):
        gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="3")
    with pytest.raises(ModelCallRefusedError):  # paused: nothing starts until it is resumed
        gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="3")

    code, out, _ = budget(capsys, data_location, "show", "--task", task_id.value, "--entries")
    assert code == 0
    assert "awaiting a decision: ledger entries" in out and "  task state   paused" in out
    assert "unknown-charge" in out and "charged at the reserved bound (usage unknown)" in out

    code, _, err = budget(capsys, data_location, "resume", "--task", task_id.value)
    assert code == 2 and "acknowledge the pending charges first" in err
    code, out, err = budget(capsys, data_location, "acknowledge", "--task", task_id.value)
    assert code == 0, err
    assert "awaiting a decision" not in out
    code, out, err = budget(capsys, data_location, "resume", "--task", task_id.value)
    assert code == 0, err
    assert f"task {task_id}: running" in out

    third = gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="3")
    assert third.charged == Money(minor=100, currency=USD)


def test_a_limit_below_what_is_spent_is_refused_and_a_stale_revision_conflicts(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_id, gateway = setup(db, tmp_path, [ScriptedTurn(text="a", usage=KNOWN)])
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=500, currency=USD), expected_revision=None,
                                 idempotency_key="b")
    gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="1")

    code, _, err = budget(capsys, data_location, "set", "--task", task_id.value, "--limit", "0.99")
    assert code == 2 and "$0.99 is below the $1.00 already spent and reserved" in err
    code, _, err = budget(capsys, data_location, "set", "--task", task_id.value, "--limit", "9", "--revision", "7")
    assert code == 1 and "expected revision 7" in err
    code, _, err = budget(capsys, data_location, "set", "--task", task_id.value, "--limit", "1.001")
    assert code == 2
    assert BudgetService(db).summary(task_id).hard_limit == Money(minor=500, currency=USD)


def test_stop_cancels_a_task_paused_by_its_budget(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_id, gateway = setup(db, tmp_path, [])
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=0, currency=USD), expected_revision=None,
                                 idempotency_key="b")
    with pytest.raises(Exception, match="reached its hard budget"):
        gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="1")

    code, out, err = budget(capsys, data_location, "stop", "--task", task_id.value)

    assert code == 0, err
    assert f"task {task_id}: cancelled" in out
    assert db.read(lambda view: require_task(view, task_id)).state is TaskState.CANCELLED
