"""Done means: several gateway calls through a real loopback provider hit the hard budget, the task is
paused with exact figures, the person raises the limit from the CLI, and the work finishes.

Everything is real but the model: a migrated database file, the key in the Secret Service, a loopback
server speaking the Anthropic Messages wire, the ``codeflux`` CLI as a separate process. Run with
``-s`` to see the figures it prints.

Arithmetic (claude-sonnet-4-5: 3.00 / 15.00 / 0.30 / 3.75 USD per million input / output / cache read /
cache write tokens). The request is 8,000 input tokens by the gateway's estimate and asks for at most
1,024 output tokens; the Anthropic route asks for prompt caching, so its input is reserved at the
cache-write rate (the dearest it can be billed at) and each call reserves ⌈8000 × 3.75/1M + 1024 × 15/1M⌉
= ⌈4.536⌉ = 5 cents.

    call 1  900 in, 200 out                    0.570 ¢ → charged 1 ¢   spent 1
    call 2  950 in, 1000 out, 2000 cache read  1.845 ¢ → charged 2 ¢   spent 3
    call 3  refused: 3 spent + 5 reserved > 6 limit → paused (spent $0.03, remaining $0.03)
    limit raised to $0.10, task resumed
    call 3  1000 in, 800 out, 1000 cache write 1.875 ¢ → charged 2 ¢   spent 5
    call 4  500 in, 100 out                    0.300 ¢ → charged 1 ¢   spent 6, remaining $0.04
"""

from __future__ import annotations

import os
from pathlib import Path

import keyring.backend
import pytest

from codeflux.cli.exit_codes import ExitCode, exit_code_for
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import GatewayReply, ModelGateway, ModelRoute
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.budget import bound_input_tokens
from codeflux.domain.errors import BudgetExhaustedError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest
from codeflux.domain.money import USD, Money
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.redact import Redactor
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.task_records import change_task_state, transitions_of_task
from codeflux.store.tasks import insert_task, require_task
from tests.fixtures.cli import run_codeflux
from tests.fixtures.provider_servers import ProviderServer, a_test_key, anthropic_message, json_reply

pytestmark = pytest.mark.keyring

REPO = Path(__file__).resolve().parents[2]
REQUEST = ModelRequest(model="set-by-the-rung", system="", messages=(Message.user_text("x" * 29_852),),
                       max_output_tokens=1024)


def reply_using(input_tokens: int, output_tokens: int, *, cache_read: int = 0, cache_write: int = 0) -> object:
    used = {"input_tokens": input_tokens, "output_tokens": output_tokens, "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write}
    return json_reply(anthropic_message(content=[{"type": "text", "text": "done"}], usage=used))


def state_of(db: Database, task_id: TaskId) -> TaskState:
    return db.read(lambda view: require_task(view, task_id)).state


def test_hitting_the_hard_budget_pauses_the_task_with_exact_figures_and_raising_it_lets_the_work_finish(
    db: Database, data_location: DataLocation, tmp_path: Path, server: ProviderServer,
    secret_service: keyring.backend.KeyringBackend,
) -> None:
    store_provider_key(ProviderName.ANTHROPIC, Secret(a_test_key()))
    approve_model_endpoint(db, provider=ProviderName.ANTHROPIC, base_url=server.base_url)
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "repo",
                                    worktree=tmp_path / "worktree", state=TaskState.RUNNING))
    budgets = BudgetService(db)
    budgets.set_budget(task_id, hard_limit=Money(minor=6, currency=USD), expected_revision=None,
                       idempotency_key="initial-budget")
    assert bound_input_tokens(REQUEST) == 8000
    redactor = Redactor()
    figures: list[str] = []
    with AnthropicAdapter(base_url=server.base_url, redactor=redactor) as adapter:
        gateway = ModelGateway(db, [ModelRoute(provider="anthropic", adapter=adapter, cheap_model="claude-sonnet-4-5",
                                               capable_model="claude-opus-4-5", redactor=redactor)])

        def call(key: str) -> GatewayReply:
            reply = gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key=key)
            figures.append(f"{key}: reserved {reply.reserved}, cost {reply.cost}, charged {reply.charged}, "
                           f"spent {reply.budget.spent}, remaining {reply.budget.remaining}")
            return reply

        server.enqueue(reply_using(900, 200), reply_using(950, 1000, cache_read=2000))
        first, second = call("call-1"), call("call-2")
        assert [first.reserved, first.charged, second.reserved, second.charged] == [
            Money(minor=5, currency=USD), Money(minor=1, currency=USD),
            Money(minor=5, currency=USD), Money(minor=2, currency=USD)]  # fmt: skip

        with pytest.raises(BudgetExhaustedError) as exhausted:
            call("call-3")
        assert exit_code_for(exhausted.value) is ExitCode.DECISION_NEEDED
        assert "the next call reserves $0.05 and $0.03 is left of $0.06" in str(exhausted.value)
        assert len(server.requests) == 2  # nothing was sent for the refused call
        assert state_of(db, task_id) is TaskState.PAUSED
        moves = db.read(lambda view: transitions_of_task(view, task_id))
        assert (moves[-1].from_state, moves[-1].to_state, moves[-1].actor) == (
            TaskState.RUNNING, TaskState.PAUSED, "system")
        paused = budgets.summary(task_id)
        assert (paused.hard_limit.minor, paused.spent_known.minor, paused.reserved_known.minor) == (6, 3, 0)
        assert paused.remaining == Money(minor=3, currency=USD) and paused.tokens_used == 1100 + 3950

        shown = run_codeflux("budget", "show", "--task", task_id.value, "--entries",
                             data_dir=data_location.directory, env={"PYTHONPATH": str(REPO)})
        assert shown.code == 0, shown.err
        assert "  hard limit   $0.06" in shown.out and "  spent        $0.03" in shown.out
        assert "  remaining    $0.03" in shown.out and "  reserved     $0.00" in shown.out
        assert "  task state   paused" in shown.out
        figures += ["paused:", *shown.out.splitlines()]

        raised = run_codeflux("budget", "set", "--task", task_id.value, "--limit", "0.10", "--revision", "0",
                              data_dir=data_location.directory, env={"PYTHONPATH": str(REPO)})
        assert raised.code == 0, raised.err
        resumed = run_codeflux("budget", "resume", "--task", task_id.value, data_dir=data_location.directory,
                               env={"PYTHONPATH": str(REPO)})
        assert resumed.code == 0, resumed.err
        assert state_of(db, task_id) is TaskState.RUNNING

        server.enqueue(reply_using(1000, 800, cache_write=1000), reply_using(500, 100))
        third, fourth = call("call-3"), call("call-4")
        assert [third.charged, fourth.charged] == [Money(minor=2, currency=USD), Money(minor=1, currency=USD)]

    db.write(lambda tx: change_task_state(tx, task_id=task_id, expected_revision=require_task(tx, task_id).revision,
                                          state=TaskState.VALIDATING, reason="the work moves on to checks"))
    final = budgets.summary(task_id)
    assert (final.hard_limit.minor, final.spent_known.minor, final.reserved_known.minor) == (10, 6, 0)
    assert final.spent == Money(minor=6, currency=USD) and final.remaining == Money(minor=4, currency=USD)
    assert final.tokens_used == 1100 + 3950 + 2800 + 600 and final.pending_decisions == ()
    kinds = [(entry.kind, entry.amount_minor) for entry in budgets.entries(task_id)]
    assert kinds == [("reserve", 5), ("settle", 1), ("release", 4), ("reserve", 5), ("settle", 2), ("release", 3),
                     ("reserve", 5), ("settle", 2), ("release", 3), ("reserve", 5), ("settle", 1), ("release", 4)]
    assert len(server.requests) == 4
    print("\n".join(["", *figures, "finished:", *final.lines()]))
