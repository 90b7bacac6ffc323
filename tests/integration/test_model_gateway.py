"""The model gateway against a loopback server speaking the real Anthropic Messages wire.

Keys come from the real Secret Service; the database is a real migrated file. Each test checks what a
user could observe: the request rows, the ledger, the events, the task state, and what reached the
provider (how many requests). Figures are exact minor units, computed here from the published rates:
claude-sonnet-4-5 costs 3.00 / 15.00 / 0.30 / 3.75 USD per million input / output / cache-read /
cache-write tokens, so a token costs 3/10000, 15/10000, 3/100000 and 3/8000 of a cent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute, reconcile_interrupted_model_requests
from codeflux.coordinator.spending.model_approvals import approve_ladder_rung, approve_model_endpoint
from codeflux.domain.budget import bound_input_tokens
from codeflux.domain.errors import (
    BudgetDecisionNeededError,
    BudgetExhaustedError,
    ConflictError,
    EndpointApprovalRequiredError,
    ProviderOutcomeUnknownError,
    ProviderRejectedError,
    RungApprovalRequiredError,
)
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import DEFAULT_LADDER, LadderPosition, Rung
from codeflux.domain.models import Message, ModelRequest
from codeflux.domain.money import USD, Money, UnknownCost
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.providers.transport import HttpPolicy, ProviderHttp
from codeflux.redact import REDACTED, Redactor
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.model_requests import model_request_by_key, read_model_request
from codeflux.store.tasks import insert_task, require_task
from tests.fixtures.journal import event_kinds
from tests.fixtures.provider_servers import (
    ProviderServer,
    Reply,
    SleepRecorder,
    anthropic_message,
    anthropic_stream,
    json_reply,
    sse_reply,
)

pytestmark = pytest.mark.keyring

REPO = Path(__file__).resolve().parents[2]
FAST = HttpPolicy(backoff_base_s=0.25, backoff_cap_s=1.0, retry_after_cap_s=30.0, max_attempts=4)
CHEAP = "claude-sonnet-4-5"
CAPABLE = "claude-opus-4-5"
INPUT, OUTPUT = Fraction(3, 10_000), Fraction(15, 10_000)
CACHE_READ, CACHE_WRITE = Fraction(3, 100_000), Fraction(3, 8000)
REQUEST = ModelRequest(model="chosen-by-the-rung", system="You are terse.",
                       messages=(Message.user_text("Summarize README.md in one line." * 400),), max_output_tokens=1024)
START = LadderPosition.start()


def ceil(value: Fraction) -> int:
    return -(-value.numerator // value.denominator)


def expected_bound(request: ModelRequest) -> int:
    # The Anthropic route writes a prompt cache: every input token at the cache-write rate (3.75, above
    # the input's 3.00 and a cache read's 0.30); output at 15.00.
    return ceil(bound_input_tokens(request) * CACHE_WRITE + request.max_output_tokens * OUTPUT)


def usage(input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0) -> dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write}


def text_reply(used: dict[str, int] | None) -> Reply:
    return json_reply(anthropic_message(content=[{"type": "text", "text": "A one-line summary."}], usage=used))


def new_task(db: Database, tmp_path: Path, *, state: TaskState = TaskState.RUNNING) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "repo",
                                    worktree=tmp_path / "worktree", state=state))
    return task_id


def ledger(db: Database, task_id: TaskId) -> list[tuple[str, int | None]]:
    return [(entry.kind, entry.amount_minor) for entry in BudgetService(db).entries(task_id)]


@pytest.fixture
def gateway(db: Database, server: ProviderServer, anthropic_key: str, waits: SleepRecorder) -> Iterator[ModelGateway]:
    redactor = Redactor()
    http = ProviderHttp(provider="Anthropic", redactor=redactor, policy=FAST, sleep=waits, jitter=lambda: 1.0)
    with AnthropicAdapter(base_url=server.base_url, redactor=redactor, http=http) as adapter:
        route = ModelRoute(provider="anthropic", adapter=adapter, cheap_model=CHEAP, capable_model=CAPABLE,
                           redactor=redactor)
        yield ModelGateway(db, [route])


@pytest.fixture
def approved(db: Database, server: ProviderServer) -> str:
    return approve_model_endpoint(db, provider=ProviderName.ANTHROPIC, base_url=server.base_url + "/")


def budgeted_task(db: Database, tmp_path: Path, *, limit_minor: int = 1_000) -> TaskId:
    task_id = new_task(db, tmp_path)
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=limit_minor, currency=USD), expected_revision=None,
                                 idempotency_key="budget-1")
    return task_id


# ------------------------------------------------------------------------------------------ approvals


def test_an_unapproved_loopback_endpoint_is_refused_before_anything_is_sent(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway
) -> None:
    task_id = budgeted_task(db, tmp_path)

    with pytest.raises(EndpointApprovalRequiredError) as refused:
        gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    assert refused.value.base_url == server.base_url
    assert server.requests == []
    assert ledger(db, task_id) == []
    assert event_kinds(db, task_id)[-1] == "model-call-refused"
    assert db.read(lambda view: require_task(view, task_id)).state is TaskState.RUNNING


def test_capable_max_asks_before_its_first_call_and_spends_once_approved(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, approved: str
) -> None:
    task_id = budgeted_task(db, tmp_path)
    top = Rung.parse("capable:max")
    position = LadderPosition(ladder=DEFAULT_LADDER.with_rung(top), rung=top)

    with pytest.raises(RungApprovalRequiredError):
        gateway.call(task_id, REQUEST, position=position, idempotency_key="call-1")
    assert server.requests == []

    approve_ladder_rung(db, task_id=task_id, rung=top)
    server.enqueue(text_reply(usage(10, 10)))
    reply = gateway.call(task_id, REQUEST, position=position, idempotency_key="call-2")

    body = server.requests[0].json()
    assert body["model"] == CAPABLE
    assert reply.rung == top and reply.model == CAPABLE


# ----------------------------------------------------------------------------------------- settling


def test_a_success_reserves_the_bound_then_settles_the_exact_cost_and_releases_the_rest(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, approved: str
) -> None:
    task_id = budgeted_task(db, tmp_path)
    server.enqueue(text_reply(usage(2095, 503, cache_read=2000, cache_write=100)))

    reply = gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    bound = expected_bound(REQUEST)
    exact = 2095 * INPUT + 503 * OUTPUT + 2000 * CACHE_READ + 100 * CACHE_WRITE  # 1.44075 cents
    assert ceil(exact) == 2
    assert reply.reserved == Money(minor=bound, currency=USD)
    assert reply.cost == reply.charged == Money(minor=2, currency=USD)
    assert reply.overrun is None
    assert ledger(db, task_id) == [("reserve", bound), ("settle", 2), ("release", bound - 2)]
    assert reply.budget.spent == Money(minor=2, currency=USD)
    assert reply.budget.reserved == Money.zero(USD)
    assert reply.budget.remaining == Money(minor=998, currency=USD)
    row = db.read(lambda view: read_model_request(view, reply.request_id))
    assert row.state == "succeeded" and row.plan.model == CHEAP and row.plan.rung == "cheap:low"
    assert row.end is not None and row.end.cost_minor == 2 and row.end.usage.input_tokens == 2095
    assert server.requests[0].json()["model"] == CHEAP
    assert event_kinds(db, task_id)[-3:] == ["model-call-planned", "model-call-started", "model-call-finished"]


def test_the_same_key_never_sends_a_call_twice(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, approved: str
) -> None:
    task_id = budgeted_task(db, tmp_path)
    server.enqueue(text_reply(usage(10, 10)))
    gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    with pytest.raises(ConflictError, match="never sent twice"):
        gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    assert len(server.requests) == 1


def test_missing_usage_charges_the_reserved_bound_and_blocks_paid_calls_until_acknowledged(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, approved: str
) -> None:
    task_id = budgeted_task(db, tmp_path)
    server.enqueue(text_reply(None))

    reply = gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    bound = expected_bound(REQUEST)
    assert isinstance(reply.cost, UnknownCost)
    assert reply.charged == Money(minor=bound, currency=USD)
    assert ledger(db, task_id) == [("reserve", bound), ("unknown-charge", bound)]
    assert reply.budget.spent == Money(minor=bound, currency=USD)
    assert reply.budget.charged_at_bound == 1 and len(reply.budget.pending_decisions) == 1

    with pytest.raises(BudgetDecisionNeededError, match="await acknowledgement"):
        gateway.call(task_id, REQUEST, position=START, idempotency_key="call-2")
    assert len(server.requests) == 1
    assert db.read(lambda view: require_task(view, task_id)).state is TaskState.PAUSED

    budgets = BudgetService(db)
    budgets.acknowledge(task_id, expected_revision=budgets.summary(task_id).revision)
    budgets.resume_task(task_id)
    server.enqueue(text_reply(usage(10, 10)))
    assert gateway.call(task_id, REQUEST, position=START, idempotency_key="call-3").charged == Money(minor=1,
                                                                                                   currency=USD)


def test_a_cost_above_the_reservation_is_settled_in_full_as_an_overrun_that_needs_acknowledgement(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, approved: str
) -> None:
    task_id = budgeted_task(db, tmp_path)
    server.enqueue(text_reply(usage(200_000, 1000)))  # far more input than the request could hold

    reply = gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    bound = expected_bound(REQUEST)
    cost = ceil(200_000 * INPUT + 1000 * OUTPUT)  # 60 + 1.5 → 62 cents
    assert cost == 62 and reply.cost == Money(minor=62, currency=USD)
    assert reply.overrun == Money(minor=62 - bound, currency=USD)
    assert ledger(db, task_id) == [("reserve", bound), ("settle", bound), ("overrun", 62 - bound)]
    assert reply.budget.spent == Money(minor=62, currency=USD)
    with pytest.raises(BudgetDecisionNeededError):
        gateway.call(task_id, REQUEST, position=START, idempotency_key="call-2")
    assert len(server.requests) == 1


@pytest.mark.usefixtures("approved")
def test_a_429_is_retried_by_the_transport_and_the_call_is_charged_once(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, waits: SleepRecorder
) -> None:
    task_id = budgeted_task(db, tmp_path)
    server.enqueue(json_reply({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
                              status=429, headers=[("retry-after", "1")]),
                   text_reply(usage(100, 100)))

    reply = gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    assert len(server.requests) == 2 and waits.waits == [1.0]
    assert reply.charged == Money(minor=ceil(100 * INPUT + 100 * OUTPUT), currency=USD)
    kinds = [kind for kind, _ in ledger(db, task_id)]
    assert kinds == ["reserve", "settle", "release"]
    assert event_kinds(db, task_id).count("model-call-planned") == 1


def test_a_cut_stream_is_outcome_unknown_never_retried_and_charged_the_bound(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, approved: str
) -> None:
    task_id = budgeted_task(db, tmp_path)
    server.enqueue(sse_reply(anthropic_stream(text_pieces=["Half ", "a ", "reply"], final_usage={"output_tokens": 9}),
                             cut_after=4))
    shown: list[str] = []

    with pytest.raises(ProviderOutcomeUnknownError):
        gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1", on_text=shown.append)

    bound = expected_bound(REQUEST)
    assert len(server.requests) == 1
    assert ledger(db, task_id) == [("reserve", bound), ("unknown-charge", bound)]
    summary = BudgetService(db).summary(task_id)
    assert summary.spent == Money(minor=bound, currency=USD) and summary.pending_decisions
    rows = [event for event in event_kinds(db, task_id) if event.startswith("model-call")]
    assert rows == ["model-call-planned", "model-call-started", "model-call-finished"]


@pytest.mark.usefixtures("approved")
def test_a_provider_refusal_sent_nothing_billable_releases_the_reservation_and_stores_no_key(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, anthropic_key: str
) -> None:
    task_id = budgeted_task(db, tmp_path)
    body = b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key {echo}"}}'
    server.enqueue(Reply(status=401, headers=(("content-type", "application/json"),), chunks=(body,),
                         echo_header="x-api-key"))

    with pytest.raises(ProviderRejectedError):
        gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    bound = expected_bound(REQUEST)
    assert ledger(db, task_id) == [("reserve", bound), ("release", bound)]
    assert BudgetService(db).summary(task_id).spent == Money.zero(USD)
    stored = db.read(lambda view: model_request_by_key(view, task_id=task_id, idempotency_key="call-1"))
    assert stored is not None and stored.state == "failed" and stored.end is not None
    assert stored.end.error_kind == "rejected" and stored.end.cost_minor == 0
    assert anthropic_key not in (stored.end.error_message or "") and REDACTED in (stored.end.error_message or "")


@pytest.mark.usefixtures("approved")
def test_streamed_text_reaches_the_caller_redacted_even_when_the_key_is_split_across_chunks(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, anthropic_key: str
) -> None:
    task_id = budgeted_task(db, tmp_path)
    events = anthropic_stream(text_pieces=["The key is {echo}", " and that is all."],
                              start_usage=usage(20, 1), final_usage={"output_tokens": 12})
    server.enqueue(Reply(headers=(("content-type", "text/event-stream"),), chunks=tuple(events), chunked=True,
                         echo_header="x-api-key"))
    shown: list[str] = []

    reply = gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1", on_text=shown.append)

    assert anthropic_key in reply.reply.text  # the loop gets the provider's reply as it is
    assert anthropic_key not in "".join(shown) and "".join(shown) == f"The key is {REDACTED} and that is all."


def test_a_call_without_a_price_is_refused_unless_unknown_prices_are_allowed(
    db: Database, tmp_path: Path, server: ProviderServer, anthropic_key: str, approved: str
) -> None:
    task_id = new_task(db, tmp_path)
    budgets = BudgetService(db)
    budgets.set_budget(task_id, hard_limit=Money(minor=100, currency=USD), expected_revision=None,
                       idempotency_key="b1")
    redactor = Redactor()
    with AnthropicAdapter(base_url=server.base_url, redactor=redactor) as adapter:
        route = ModelRoute(provider="anthropic", adapter=adapter, cheap_model="claude-unpriced-1",
                           capable_model="claude-unpriced-2", redactor=redactor)
        gateway = ModelGateway(db, [route])
        with pytest.raises(BudgetDecisionNeededError, match="no price for model claude-unpriced-1"):
            gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")
        assert server.requests == []

        budgets.resume_task(task_id)
        budgets.set_budget(task_id, hard_limit=Money(minor=100, currency=USD), expected_revision=0,
                           idempotency_key="b2", allow_unknown_price=True)
        server.enqueue(text_reply(usage(10, 10)))
        reply = gateway.call(task_id, REQUEST, position=START, idempotency_key="call-2")

    assert isinstance(reply.cost, UnknownCost) and isinstance(reply.charged, UnknownCost)
    assert ledger(db, task_id) == [("reserve", None), ("unknown-charge", None)]
    assert isinstance(reply.budget.spent, UnknownCost) and isinstance(reply.budget.remaining, UnknownCost)
    assert str(reply.budget.spent) == "unknown (1 charge(s) of unknown amount; known part $0.00)"
    assert str(reply.budget.remaining).startswith("unknown (")
    assert reply.budget.pending_decisions == ()  # accepted by the standing allowance


def test_the_hard_limit_refuses_the_call_commits_the_event_and_pauses_the_task(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway, approved: str
) -> None:
    bound = expected_bound(REQUEST)
    task_id = budgeted_task(db, tmp_path, limit_minor=bound - 1)

    with pytest.raises(BudgetExhaustedError) as refused:
        gateway.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    assert f"reserves ${bound // 100}.{bound % 100:02d}" in str(refused.value)
    assert server.requests == [] and ledger(db, task_id) == []
    assert db.read(lambda view: require_task(view, task_id)).state is TaskState.PAUSED
    assert event_kinds(db, task_id)[-3:] == ["budget-exhausted", "model-call-refused", "task-state-changed"]


# ------------------------------------------------------------------------------------------- crashes

CHILD = """
import sys
from pathlib import Path
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store

data_dir, base_url, task = sys.argv[1:4]
db = open_store(DataLocation(directory=Path(data_dir)), create=False, migrate=False)
route = ModelRoute(provider="anthropic", adapter=AnthropicAdapter(base_url=base_url),
                   cheap_model="claude-sonnet-4-5", capable_model="claude-opus-4-5")
request = ModelRequest(model="m", system="", messages=(Message.user_text("hello"),), max_output_tokens=64)
ModelGateway(db, [route]).call(TaskId.parse(task), request, position=LadderPosition.start(), idempotency_key="c1")
"""


@pytest.mark.usefixtures("anthropic_key", "approved")
def test_a_crash_mid_call_leaves_it_in_flight_and_reconcile_marks_it_outcome_unknown_charged_never_retried(
    db: Database, data_location: DataLocation, tmp_path: Path, server: ProviderServer
) -> None:
    task_id = budgeted_task(db, tmp_path)
    # The server holds the reply for 3 s: long enough to kill the caller while it waits.
    server.enqueue(Reply(headers=(("content-type", "application/json"),), chunks=(b"{}",), delay_s=3.0))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(data_location.directory), server.base_url,
                              task_id.value], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not server.requests and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        assert server.requests, "the child never reached the provider"
        os.killpg(child.pid, signal.SIGKILL)  # the reply is still held by the slow server
    finally:
        child.wait(timeout=30)

    entries = ledger(db, task_id)
    assert [kind for kind, _ in entries] == ["reserve"]
    bound = entries[0][1]

    reconciled = reconcile_interrupted_model_requests(db)

    assert len(reconciled) == 1
    row = db.read(lambda view: read_model_request(view, reconciled[0]))
    assert row.state == "outcome-unknown" and row.end is not None and row.end.error_kind == "interrupted"
    assert ledger(db, task_id) == [("reserve", bound), ("unknown-charge", bound)]
    assert reconcile_interrupted_model_requests(db) == []
    assert len(server.requests) == 1
