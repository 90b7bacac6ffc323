"""OpenAI-compatible servers as users run them (issue 21, items 8 and 10), through the model gateway.

A loopback server answers like LiteLLM, vLLM and Ollama do: usage without ``prompt_tokens_details``,
a 404 ``{"detail": "Not Found"}`` when the base URL lacks ``/v1``, request ids in their own headers, 429s
without ``Retry-After``. The database is a real migrated file; the server takes no key (``--no-key``), so
no credential store is needed. Waits are recorded by a stand-in for ``time.sleep``: nothing sleeps.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.cli import prices as prices_cli
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.domain.errors import BudgetDecisionNeededError, ProviderRejectedError, ProviderUnavailableError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest
from codeflux.domain.money import USD, Money, UnknownCost
from codeflux.domain.pricing import Price
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.providers.chat_completions import NO_CACHE_REPORTED, ChatWire
from codeflux.providers.openai_compatible import OpenAICompatibleAdapter
from codeflux.providers.transport import HttpPolicy, ProviderHttp
from codeflux.redact import Redactor
from codeflux.services.prices import parse_price
from codeflux.store.database import Database
from codeflux.store.events import read_events_after
from codeflux.store.model_requests import model_request_by_key
from codeflux.store.tasks import insert_task, require_task, task_session_id
from tests.fixtures.cli import run_codeflux
from tests.fixtures.provider_servers import ProviderServer, SleepRecorder, json_reply, openai_completion

MODEL = "llama-3.1-8b-local"
START = LadderPosition.start()
REQUEST = ModelRequest(model="chosen-by-the-rung", system="You are terse.",
                       messages=(Message.user_text("Summarize README.md in one line."),), max_output_tokens=256)
LITELLM_USAGE = {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}  # no *_details


def task_with_budget(db: Database, tmp_path: Path, *, limit_minor: int = 1_000) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "repo",
                                    worktree=tmp_path / "worktree", state=TaskState.RUNNING))
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=limit_minor, currency=USD), expected_revision=None,
                                 idempotency_key="budget-1")
    return task_id


def price_local_model(db: Database) -> None:
    """What a user records for a local model: input and output only (no cache-read rate: unknown)."""
    price = Price.from_per_million_tokens(currency=USD, input_per_million="1.00", output_per_million="2.00")
    PriceCatalog(db).set_user_price(provider="openai-compatible", model=MODEL, price=price,
                                    effective_date=dt.date(2026, 1, 1))


def gateway_for(db: Database, base_url: str, waits: SleepRecorder) -> tuple[ModelGateway, OpenAICompatibleAdapter]:
    redactor = Redactor()
    http = ProviderHttp(provider="OpenAI-compatible", redactor=redactor, sleep=waits, jitter=lambda: 1.0)
    adapter = OpenAICompatibleAdapter(base_url=base_url, uses_key=False, redactor=redactor, http=http)
    approve_model_endpoint(db, provider=ProviderName.OPENAI_COMPATIBLE, base_url=base_url)
    route = ModelRoute(provider="openai-compatible", adapter=adapter, cheap_model=MODEL, capable_model=MODEL,
                       redactor=redactor)
    return ModelGateway(db, [route]), adapter


@pytest.fixture
def compatible(db: Database, server: ProviderServer, waits: SleepRecorder) -> Iterator[ModelGateway]:
    gateway, adapter = gateway_for(db, server.base_url + "/v1", waits)
    with adapter:
        yield gateway


def refusals(db: Database, task_id: TaskId) -> list[str]:
    events = db.read(lambda view: read_events_after(view, session_id=task_session_id(task_id), after_sequence=0,
                                                    limit=1000))
    return [str(event.payload["reason"]) for event in events if event.kind == "model-call-refused"]


# ─── 1. an unknown price names the command that fixes it ─────────────────────────────────────────


def test_an_unknown_price_names_the_exact_prices_set_command_and_that_command_fixes_it(
    db: Database, tmp_path: Path, server: ProviderServer, compatible: ModelGateway
) -> None:
    task_id = task_with_budget(db, tmp_path)
    command = (f"codeflux prices set --provider openai-compatible --model {MODEL} --input R --output R "
               "--currency USD")

    with pytest.raises(BudgetDecisionNeededError) as refused:
        compatible.call(task_id, REQUEST, position=START, idempotency_key="call-1")

    assert f"`{command}`" in str(refused.value) and f"`codeflux task resume {task_id}`" in str(refused.value)
    assert any(command in reason for reason in refusals(db, task_id))  # what the UI shows for the pause
    assert db.read(lambda view: require_task(view, task_id)).state is TaskState.PAUSED
    assert server.requests == []

    # The named command, its rates filled in, parses and records exactly that model's price …
    parser = argparse.ArgumentParser()
    prices_cli.configure(parser)
    args = parser.parse_args(shlex.split(command.replace(" R ", " 0.50 ").replace(" R ", " 1.50 "))[2:])
    parsed = parse_price(prices_cli._set_request(args))
    PriceCatalog(db).set_user_price(provider=parsed.provider.value, model=parsed.model, price=parsed.price,
                                    effective_date=dt.date(2026, 1, 1))
    # … after which the same call goes through (the positive control of the refusal).
    BudgetService(db).resume_task(task_id)
    server.enqueue(json_reply(openai_completion(content="ok", usage=LITELLM_USAGE, model=MODEL)))
    assert isinstance(compatible.call(task_id, REQUEST, position=START, idempotency_key="call-2").cost, Money)


# ─── 2. usage without prompt_tokens_details ─────────────────────────────────────────────────────


def test_usage_without_cache_details_is_priced_with_cache_reads_zero_and_the_reported_tokens(
    db: Database, tmp_path: Path, server: ProviderServer, compatible: ModelGateway
) -> None:
    price_local_model(db)
    task_id = task_with_budget(db, tmp_path)
    server.enqueue(*[json_reply(openai_completion(content="ok", usage=LITELLM_USAGE, model=MODEL))] * 3)

    replies = [compatible.call(task_id, REQUEST, position=START, idempotency_key=f"call-{n}") for n in range(3)]

    # 1200 input at $1/M + 30 output at $2/M = 0.1260 cents, rounded up to 1 cent; no call paused the run
    assert [reply.cost for reply in replies] == [Money(minor=1, currency=USD)] * 3
    usage = replies[0].reply.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (1200, 0, 30)
    summary = BudgetService(db).summary(task_id)
    assert summary.pending_decisions == () and summary.tokens_used == 3 * 1230  # reported, not the bound
    row = db.read(lambda view: model_request_by_key(view, task_id=task_id, idempotency_key="call-0"))
    assert row is not None and row.end is not None and row.end.cost_minor == 1
    assert row.end.cost_reason == NO_CACHE_REPORTED  # the call's record says how the count was read
    assert db.read(lambda view: require_task(view, task_id)).state is TaskState.RUNNING


def test_an_endpoint_that_reports_caching_keeps_a_missing_count_unknown_and_a_reported_one_as_is() -> None:
    body = json.dumps(openai_completion(content="ok", usage=LITELLM_USAGE)).encode()
    openai = ChatWire(provider="OpenAI", max_tokens_field="max_completion_tokens", sends_reasoning_effort=True)
    local = ChatWire(provider="local", max_tokens_field="max_tokens", sends_reasoning_effort=False,
                     reports_cache=False)

    strict = openai.reply_from_json(body, REQUEST, None)  # OpenAI always reports it: absent means unknown
    assert strict.usage.cache_read_tokens is None and strict.usage_note is None
    assert local.reply_from_json(body, REQUEST, None).usage.cache_read_tokens == 0

    cached = {**LITELLM_USAGE, "prompt_tokens_details": {"cached_tokens": 1000}}
    reported = local.reply_from_json(json.dumps(openai_completion(content="ok", usage=cached)).encode(), REQUEST,
                                     None)
    assert (reported.usage.input_tokens, reported.usage.cache_read_tokens, reported.usage_note) == (200, 1000, None)


# ─── 6. the budget acknowledge step is named ─────────────────────────────────────────────────────


def test_a_pause_for_an_unknown_charge_names_budget_acknowledge(
    db: Database, tmp_path: Path, server: ProviderServer, compatible: ModelGateway
) -> None:
    price_local_model(db)
    task_id = task_with_budget(db, tmp_path)
    server.enqueue(json_reply(openai_completion(content="ok", usage=None, model=MODEL)))  # no usage at all
    assert isinstance(compatible.call(task_id, REQUEST, position=START, idempotency_key="call-1").cost, UnknownCost)

    with pytest.raises(BudgetDecisionNeededError) as refused:
        compatible.call(task_id, REQUEST, position=START, idempotency_key="call-2")

    named = f"`codeflux budget acknowledge --task {task_id}`, then continue with `codeflux task resume {task_id}`"
    assert named in str(refused.value) and any(named in reason for reason in refusals(db, task_id))
    budgets = BudgetService(db)
    budgets.acknowledge(task_id, expected_revision=budgets.summary(task_id).revision)
    budgets.resume_task(task_id)
    server.enqueue(json_reply(openai_completion(content="ok", usage=LITELLM_USAGE, model=MODEL)))
    assert compatible.call(task_id, REQUEST, position=START, idempotency_key="call-3").cost == Money(minor=1,
                                                                                                  currency=USD)


# ─── 3. a 404 with {"detail": …} and a base URL without /v1 ──────────────────────────────────────


def test_a_404_detail_is_read_and_a_missing_v1_is_suggested(
    db: Database, server: ProviderServer, waits: SleepRecorder
) -> None:
    not_found = json_reply({"detail": "Not Found"}, status=404)
    server.enqueue(not_found, not_found)
    redactor = Redactor()
    with OpenAICompatibleAdapter(base_url=server.base_url, uses_key=False, redactor=redactor) as bare, \
            OpenAICompatibleAdapter(base_url=server.base_url + "/v1", uses_key=False, redactor=redactor) as v1:
        with pytest.raises(ProviderRejectedError) as without:
            bare.complete(REQUEST)
        with pytest.raises(ProviderRejectedError) as with_v1:
            v1.complete(REQUEST)

    assert [request.path for request in server.requests] == ["/chat/completions", "/v1/chat/completions"]
    assert "HTTP 404" in str(without.value) and "Not Found" in str(without.value)
    assert "the base URL has no /v1" in str(without.value)
    assert "Not Found" in str(with_v1.value) and "/v1" not in with_v1.value.detail  # no hint when it has /v1


def test_a_fastapi_validation_detail_list_is_read(server: ProviderServer) -> None:
    server.enqueue(json_reply({"detail": [{"loc": ["body", "model"], "msg": "field required"}]}, status=422))
    with OpenAICompatibleAdapter(base_url=server.base_url + "/v1", uses_key=False) as adapter, \
            pytest.raises(ProviderRejectedError, match="field required"):
        adapter.complete(REQUEST)


# ─── 4. request ids from the common header variants ─────────────────────────────────────────────


HEADERS = ("x-request-id", "request-id", "openai-request-id", "x-litellm-call-id")


def test_the_request_id_is_read_from_the_common_headers(
    db: Database, tmp_path: Path, server: ProviderServer, compatible: ModelGateway
) -> None:
    price_local_model(db)
    task_id = task_with_budget(db, tmp_path)
    server.enqueue(*[json_reply(openai_completion(content="ok", usage=LITELLM_USAGE, model=MODEL),
                                headers=[(header, f"req-{n}-7f3a9c")]) for n, header in enumerate(HEADERS)],
                   json_reply(openai_completion(content="ok", usage=LITELLM_USAGE, model=MODEL)))

    ids = [compatible.call(task_id, REQUEST, position=START, idempotency_key=f"call-{n}").reply.request_id
           for n in range(len(HEADERS) + 1)]

    assert ids == [f"req-{n}-7f3a9c" for n in range(len(HEADERS))] + [None]  # none sent: none recorded
    row = db.read(lambda view: model_request_by_key(view, task_id=task_id, idempotency_key="call-3"))
    assert row is not None and row.end is not None and row.end.provider_request_id == "req-3-7f3a9c"


# ─── 5. 429/5xx without Retry-After: backoff with jitter over up to a minute ─────────────────────


def test_429s_without_retry_after_back_off_with_jitter_then_the_call_goes_through(
    db: Database, server: ProviderServer
) -> None:
    limited = json_reply({"error": {"message": "Rate limit exceeded", "type": "rate_limit"}}, status=429)
    server.enqueue(limited, limited, limited,
                   json_reply(openai_completion(content="ok", usage=LITELLM_USAGE, model=MODEL)))
    waits = SleepRecorder()
    jitter = iter([0.0, 1.0, 0.5])
    http = ProviderHttp(provider="OpenAI-compatible", redactor=Redactor(), sleep=waits, jitter=lambda: next(jitter))
    with OpenAICompatibleAdapter(base_url=server.base_url + "/v1", uses_key=False, http=http) as adapter:
        assert adapter.complete(REQUEST).text == "ok"

    assert waits.waits == [0.25, 1.0, 1.5]  # 0.5, 1, 2 s ceilings, each a random 50–100 % of it
    assert len(server.requests) == 4


def test_a_server_that_keeps_failing_is_waited_for_a_minute_at_most_then_reported(server: ProviderServer) -> None:
    server.enqueue(*[json_reply({"detail": "overloaded"}, status=503)] * 9)
    waits = SleepRecorder()
    http = ProviderHttp(provider="OpenAI-compatible", redactor=Redactor(), sleep=waits, jitter=lambda: 1.0)
    with OpenAICompatibleAdapter(base_url=server.base_url + "/v1", uses_key=False, http=http) as adapter, \
            pytest.raises(ProviderUnavailableError) as raised:
        adapter.complete(REQUEST)

    assert waits.waits == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 20.0, 8.5]  # the last cut to what is left of 60 s
    assert sum(waits.waits) == HttpPolicy().retry_wait_total_s == 60.0
    assert raised.value.attempts == 9 and raised.value.status == 503 and "overloaded" in str(raised.value)
    assert not raised.value.may_have_been_processed


def test_a_server_that_is_not_running_is_reported_after_a_few_quick_attempts() -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits = SleepRecorder()
    http = ProviderHttp(provider="OpenAI-compatible", redactor=Redactor(), sleep=waits, jitter=lambda: 1.0)
    with OpenAICompatibleAdapter(base_url=f"http://127.0.0.1:{port}/v1", uses_key=False, http=http) as adapter, \
            pytest.raises(ProviderUnavailableError) as raised:
        adapter.complete(REQUEST)

    assert raised.value.attempts == HttpPolicy().max_connect_attempts == 4
    assert waits.waits == [0.5, 1.0, 2.0]


def test_a_headless_run_stopped_by_an_unknown_price_exits_4_naming_the_command(
    tmp_path: Path, server: ProviderServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from codeflux.cli.main import main

    repo, data = tmp_path / "demo", tmp_path / "data"
    assert main(["--data-dir", str(data), "demo", "init", str(repo)]) == 0
    base_url = server.base_url + "/v1"
    assert main(["--data-dir", str(data), "provider", "approve-endpoint", "--name", "openai-compatible",
                 "--base-url", base_url]) == 0
    capsys.readouterr()

    code = main(["--data-dir", str(data), "run", "--repo", str(repo), "--requirement-file", str(repo / "TASK.md"),
                 "--provider", "openai-compatible", "--base-url", base_url, "--no-key", "--cheap-model", MODEL,
                 "--yes"])

    shown = capsys.readouterr()
    assert code == 4, shown.err[-2000:]
    assert (f"`codeflux prices set --provider openai-compatible --model {MODEL} --input R --output R "
            "--currency USD`") in shown.out + shown.err
    assert server.requests == []  # refused before anything was sent


# ─── a first run against an endpoint not approved yet ─────────────────────────────────────────────


def test_a_first_run_refused_by_the_endpoint_approval_names_its_command_and_pauses_the_task(
        tmp_path: Path, server: ProviderServer) -> None:
    """Issue 21 item 10, the "Why": the real CLI left the task `forecasting` with nobody drafting its plan, and the
    error said only "approve that exact base URL first"."""
    data, repo, base_url = tmp_path / "data", tmp_path / "demo", server.base_url + "/v1"
    assert run_codeflux("demo", "init", str(repo), data_dir=data).code == 0
    refused = run_codeflux("run", "--repo", str(repo), "--requirement", "Fix add()", "--provider", "openai-compatible",
                           "--base-url", base_url, "--no-key", "--cheap-model", MODEL, "--budget", "1.00", "--yes",
                           data_dir=data)
    command = f"codeflux provider approve-endpoint --name openai-compatible --base-url {base_url}"
    assert refused.code == 4 and f"`{command}`" in refused.err, refused.err
    assert server.requests == []
    [row] = [line for line in run_codeflux("task", "list", data_dir=data).out.splitlines() if "Fix add()" in line]
    assert " paused " in row  # not forecasting: `codeflux task resume` drafts the plan once approved
    approved = run_codeflux(*shlex.split(command)[1:], data_dir=data)
    assert approved.code == 0 and f"endpoint {base_url} approved" in approved.out
