"""Issue 21 item 6 (prompt caching): the Anthropic adapter marks cache breakpoints on the stable prefix,
and the gateway reserves and charges cache writes and reads at the snapshot's cache rates.

The wire samples are Anthropic's own documented bodies (``tests/data/provider_wire/
anthropic_prompt_caching.json``, "from documentation, not recorded", with URL and date): the request the
adapter sends is checked against the documented requests' breakpoints, and the documented responses are
what the loopback server answers. Keys come from the real Secret Service, the database is a real migrated
file. claude-sonnet-4-5 costs 3.00 / 15.00 / 0.30 / 3.75 / 6.00 USD per million input / output / cache-read /
cache-write / 1-hour cache-write tokens: 3/10000, 15/10000, 3/100000, 3/8000 and 6/10000 of a cent a token.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.domain.budget import bound_input_tokens
from codeflux.domain.errors import BudgetDecisionNeededError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest, Role, TextPart, ToolCall, ToolResult, tool_specs_for
from codeflux.domain.money import USD, Money, UnknownCost
from codeflux.domain.pricing import Price, PriceSource, TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import TOOL_CATALOG
from codeflux.providers.anthropic import CACHE_BREAKPOINT_LIMIT, ONE_HOUR_CACHE_WRITES, AnthropicAdapter
from codeflux.providers.prices import DEFAULT_PRICE_SNAPSHOTS, SHIPPED_SOURCE
from codeflux.redact import Redactor
from codeflux.services.views import price_use_view, rfc3339_of_us
from codeflux.store.database import Database
from codeflux.store.model_requests import read_model_request
from codeflux.store.prices import price_uses_of_task
from codeflux.store.tasks import insert_task
from tests.fixtures.provider_servers import ProviderServer, anthropic_message, json_reply

pytestmark = pytest.mark.keyring

SAMPLES_FILE = Path(__file__).resolve().parents[1] / "data" / "provider_wire" / "anthropic_prompt_caching.json"
MODEL = "claude-sonnet-4-5"
INPUT, OUTPUT = Fraction(3, 10_000), Fraction(15, 10_000)
CACHE_READ, CACHE_WRITE, CACHE_WRITE_1H = Fraction(3, 100_000), Fraction(3, 8000), Fraction(6, 10_000)
EPHEMERAL = {"type": "ephemeral"}
TOOLS = tool_specs_for(TOOL_CATALOG.values())
SYSTEM = "You are a careful coding agent. " * 60
START = LadderPosition.start()


def samples() -> dict[str, Any]:
    data = json.loads(SAMPLES_FILE.read_text(encoding="utf-8"))
    assert data["label"] == "from documentation, not recorded" and data["transcribed_on"] == "2026-12-03"
    for sample in data["samples"].values():
        assert sample["source"].startswith("https://platform.claude.com/docs/en/")
    return dict(data["samples"])


def body_of(name: str) -> dict[str, Any]:
    body: dict[str, Any] = samples()[name]["body"]
    return body


def ceil(value: Fraction) -> int:
    return -(-value.numerator // value.denominator)


def marked(blocks: list[dict[str, Any]]) -> list[int]:
    return [i for i, block in enumerate(blocks) if "cache_control" in block]


def marks_in(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cache_control mark in a request body, wherever it sits."""
    system = body.get("system")
    blocks: list[Any] = [*body.get("tools", []), *(system if isinstance(system, list) else [])]
    for message in body["messages"]:
        content = message["content"]
        blocks += content if isinstance(content, list) else []
    return [block["cache_control"] for block in blocks if "cache_control" in block]


def first_turn() -> ModelRequest:
    return ModelRequest(model="chosen-by-the-rung", system=SYSTEM, tools=TOOLS, max_output_tokens=1024,
                        messages=(Message.user_text("Make add() handle negative numbers."),))


def second_turn() -> ModelRequest:
    call = ToolCall(call_id="toolu_01A", name="read_file", arguments_json='{"path":"calc.py"}')
    return ModelRequest(model="chosen-by-the-rung", system=SYSTEM, tools=TOOLS, max_output_tokens=1024, messages=(
        *first_turn().messages,
        Message(role=Role.ASSISTANT, parts=(TextPart(text="Reading it."), call)),
        Message(role=Role.USER, parts=(ToolResult(call_id="toolu_01A", content="def add(a, b):\n    return a - b\n"),)),
    ))  # fmt: skip


def new_task(db: Database, tmp_path: Path, *, limit_minor: int = 1_000) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "repo",
                                    worktree=tmp_path / "worktree", state=TaskState.RUNNING))
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=limit_minor, currency=USD), expected_revision=None,
                                 idempotency_key="budget-1")
    return task_id


@pytest.fixture
def gateway(db: Database, server: ProviderServer, anthropic_key: str) -> Iterator[ModelGateway]:
    approve_model_endpoint(db, provider=ProviderName.ANTHROPIC, base_url=server.base_url)
    redactor = Redactor()
    with AnthropicAdapter(base_url=server.base_url, redactor=redactor) as adapter:
        route = ModelRoute(provider="anthropic", adapter=adapter, cheap_model=MODEL, capable_model="claude-opus-4-5",
                           redactor=redactor)
        assert route.writes_cache is True  # taken from the adapter: it asks for prompt caching
        yield ModelGateway(db, [route])


# ─────────────────────────────────────────────────────────────────────────────── the request


def test_the_request_marks_the_breakpoints_where_the_documented_request_does(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway
) -> None:
    documented = body_of("multiple_breakpoints_request")
    server.enqueue(json_reply(body_of("messages_create_response")))

    gateway.call(new_task(db, tmp_path), second_turn(), position=START, idempotency_key="call-1")

    sent = server.requests[0].json()
    # The documented request: 4 ephemeral marks, the most the API takes; ours stays within the limit.
    assert marks_in(documented) == [EPHEMERAL] * CACHE_BREAKPOINT_LIMIT
    assert marks_in(sent) == [EPHEMERAL] * CACHE_BREAKPOINT_LIMIT
    # Tools: only the last one is marked, in the documented shape (the mark beside name/description/schema).
    assert marked(documented["tools"]) == [len(documented["tools"]) - 1] and marked(sent["tools"]) == [len(TOOLS) - 1]
    assert set(sent["tools"][-1]) == set(documented["tools"][-1]) == {"name", "description", "input_schema",
                                                                       "cache_control"}
    # System: a list of text blocks carrying the mark, as documented.
    assert set(sent["system"][0]) == set(documented["system"][0]) == {"type", "text", "cache_control"}
    assert sent["system"] == [{"type": "text", "text": SYSTEM, "cache_control": EPHEMERAL}]
    # Messages: the newest message's last block is marked, as documented; so is the end of what the previous
    # request sent (the first user turn), which this request reads from the cache.
    assert "cache_control" in documented["messages"][-1]["content"][-1]
    assert [marked(message["content"]) for message in sent["messages"]] == [[0], [], [0]]
    documented_result = documented["messages"][2]["content"][0]
    assert documented_result["type"] == "tool_result"
    assert set(sent["messages"][2]["content"][0]) == {*documented_result, "is_error", "cache_control"}


@pytest.mark.parametrize("sample", ["multi_turn_request", "tool_definitions_request"])
def test_every_documented_request_stays_within_the_breakpoint_limit_and_marks_ephemeral_only(sample: str) -> None:
    # The limit and the mark the adapter uses are the documented ones.
    marks = marks_in(body_of(sample))
    assert 1 <= len(marks) <= CACHE_BREAKPOINT_LIMIT and all(mark == EPHEMERAL for mark in marks)


def test_an_adapter_built_without_prompt_caching_sends_no_mark_and_reserves_at_the_input_rate(
    db: Database, tmp_path: Path, server: ProviderServer, anthropic_key: str
) -> None:
    # The positive control for the marks and the cache-write reservation above.
    approve_model_endpoint(db, provider=ProviderName.ANTHROPIC, base_url=server.base_url)
    with AnthropicAdapter(base_url=server.base_url, prompt_cache=False) as adapter:
        route = ModelRoute(provider="anthropic", adapter=adapter, cheap_model=MODEL, capable_model=MODEL)
        server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "ok"}], usage={
            "input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0})))
        reply = ModelGateway(db, [route]).call(new_task(db, tmp_path), second_turn(), position=START,
                                               idempotency_key="call-1")

    sent = server.requests[0].json()
    assert marks_in(sent) == [] and sent["system"] == SYSTEM
    assert reply.reserved == Money(minor=ceil(bound_input_tokens(second_turn()) * INPUT + 1024 * OUTPUT),
                                   currency=USD)


# ──────────────────────────────────────────────────────────────────────────────── the charge


def test_the_documented_usage_is_charged_at_the_cache_rates_and_the_reservation_bounds_a_cache_write(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway
) -> None:
    response = body_of("messages_create_response")
    used = response["usage"]
    assert (used["input_tokens"], used["cache_read_input_tokens"], used["cache_creation_input_tokens"],
            used["output_tokens"]) == (2095, 2051, 2051, 503)
    task_id = new_task(db, tmp_path)
    server.enqueue(json_reply(response))

    reply = gateway.call(task_id, second_turn(), position=START, idempotency_key="call-1")

    assert reply.reply.usage == TokenUsage(input_tokens=2095, output_tokens=503, cache_read_tokens=2051,
                                           cache_write_tokens=2051, cache_write_1h_tokens=0)
    exact = 2095 * INPUT + 2051 * CACHE_READ + 2051 * CACHE_WRITE + 503 * OUTPUT  # 2.213655 cents
    assert exact != (2095 + 2051 + 2051) * INPUT + 503 * OUTPUT  # not all at the input rate
    assert reply.cost == Money(minor=ceil(exact), currency=USD) == reply.charged
    # Reserved: every input token of the estimate at the cache-write rate (the dearest), output at its cap.
    bound = ceil(bound_input_tokens(second_turn()) * CACHE_WRITE + 1024 * OUTPUT)
    assert reply.reserved == Money(minor=bound, currency=USD) and bound >= ceil(exact)
    row = db.read(lambda view: read_model_request(view, reply.request_id))
    assert row is not None and row.end is not None
    assert (row.end.usage.cache_read_tokens, row.end.usage.cache_write_tokens, row.end.cost_minor) == (2051, 2051, 3)


def test_every_shipped_anthropic_model_has_cache_rates_at_the_documented_multipliers() -> None:
    # Prompt caching's pricing note: 5-minute writes cost 1.25× the input rate, 1-hour writes 2×, reads 0.1×.
    anthropic = [s for s in DEFAULT_PRICE_SNAPSHOTS if s.provider is ProviderName.ANTHROPIC]
    assert anthropic
    for snapshot in anthropic:
        price = snapshot.price
        assert price.input_minor_per_token is not None
        assert price.cache_write_minor_per_token == price.input_minor_per_token * Fraction(5, 4), snapshot.model
        assert price.cache_write_1h_minor_per_token == price.input_minor_per_token * 2, snapshot.model
        assert price.cache_read_minor_per_token == price.input_minor_per_token / 10, snapshot.model


def test_documented_one_hour_cache_writes_are_priced_at_the_one_hour_rate_never_the_five_minute_one(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway
) -> None:
    usage = body_of("one_hour_ttl_usage")["usage"]
    assert usage["cache_creation"] == {"ephemeral_5m_input_tokens": 148, "ephemeral_1h_input_tokens": 100}
    task_id = new_task(db, tmp_path)
    server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "ok"}], usage=usage)))

    reply = gateway.call(task_id, first_turn(), position=START, idempotency_key="call-1")

    assert reply.reply.usage == TokenUsage(input_tokens=2048, output_tokens=503, cache_read_tokens=1800,
                                           cache_write_tokens=248, cache_write_1h_tokens=100)
    # 148 five-minute writes at 3.75, 100 one-hour writes at 6.00 (2× input) per million: the shipped snapshot.
    exact = 2048 * INPUT + 503 * OUTPUT + 1800 * CACHE_READ + 148 * CACHE_WRITE + 100 * CACHE_WRITE_1H
    assert reply.cost == Money(minor=ceil(exact), currency=USD) and reply.charged == reply.cost
    row = db.read(lambda view: read_model_request(view, reply.request_id))
    assert row is not None and row.end is not None and row.end.cost_minor == ceil(exact)
    assert row.end.usage.cache_write_1h_tokens == 100  # kept in the call's record
    assert ONE_HOUR_CACHE_WRITES in (row.end.cost_reason or "")  # codeflux never asks for them: said
    assert not BudgetService(db).summary(task_id).pending_decisions
    # The task's evidence names the price that priced the call: the shipped snapshot, its package, version and date.
    (use,) = db.read(lambda view: price_uses_of_task(view, task_id))
    assert use.request_ids == (reply.request_id,) and use.revision is not None
    assert (use.revision.snapshot_id, use.revision.source) == (row.plan.price_snapshot_id, PriceSource.SHIPPED)
    shown = price_use_view(use)
    assert shown.line == (f"priced by anthropic {MODEL} revision 1, the shipped snapshot {SHIPPED_SOURCE}; "
                          f"https://www.anthropic.com/pricing#api, effective {use.revision.effective_date}: 1 call")
    assert (shown.priced, shown.source, list(shown.request_ids)) == (True, "shipped", [reply.request_id])


def test_one_hour_cache_writes_under_a_price_without_a_one_hour_rate_are_an_unknown_charge_never_zero(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway
) -> None:
    PriceCatalog(db).set_user_price(provider="anthropic", model=MODEL, effective_date=dt.date(2026, 12, 3),
                                    price=Price.from_per_million_tokens(
                                        currency=USD, input_per_million="3.00", output_per_million="15.00",
                                        cache_read_per_million="0.30", cache_write_per_million="3.75"))
    usage = body_of("one_hour_ttl_usage")["usage"]
    task_id = new_task(db, tmp_path)
    server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "ok"}], usage=usage)))

    reply = gateway.call(task_id, first_turn(), position=START, idempotency_key="call-1")

    # Unknown, so the ledger books the reserved bound as an unknown charge (never a 5-minute price, never 0).
    assert isinstance(reply.cost, UnknownCost) and reply.charged == reply.reserved
    assert f"no cache-write-1h price for model {MODEL}" in reply.cost.reasons
    row = db.read(lambda view: read_model_request(view, reply.request_id))
    assert row is not None and row.end is not None and row.end.cost_minor is None
    assert f"no cache-write-1h price for model {MODEL}" in (row.end.cost_reason or "")
    assert BudgetService(db).summary(task_id).pending_decisions  # an unknown charge waits for a person
    (use,) = db.read(lambda view: price_uses_of_task(view, task_id))  # the user's revision priced it: said, with when
    assert use.revision is not None and use.revision.source is PriceSource.USER
    assert price_use_view(use).line == (
        f"priced by anthropic {MODEL} revision 1, a user revision (codeflux prices set) recorded "
        f"{rfc3339_of_us(use.revision.recorded_at_us)}, effective 2026-12-03: 1 call")


def test_the_documented_prewarm_response_is_a_cache_write_of_its_tokens(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway
) -> None:
    server.enqueue(json_reply(body_of("prewarm_response")))

    reply = gateway.call(new_task(db, tmp_path), first_turn(), position=START, idempotency_key="call-1")

    assert reply.reply.usage == TokenUsage(input_tokens=8, output_tokens=0, cache_read_tokens=0,
                                           cache_write_tokens=5120, cache_write_1h_tokens=0)
    assert reply.cost == Money(minor=ceil(8 * INPUT + 5120 * CACHE_WRITE), currency=USD)


def test_a_user_price_without_a_cache_write_rate_cannot_bound_a_caching_call_and_names_the_full_command(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway
) -> None:
    PriceCatalog(db).set_user_price(provider="anthropic", model=MODEL, effective_date=dt.date(2026, 1, 1),
                                    price=Price.from_per_million_tokens(currency=USD, input_per_million="3.00",
                                                                        output_per_million="15.00"))
    task_id = new_task(db, tmp_path)

    with pytest.raises(BudgetDecisionNeededError) as refused:
        gateway.call(task_id, first_turn(), position=START, idempotency_key="call-1")

    message = str(refused.value)
    assert f"no cache-write price for model {MODEL}" in message
    assert (f"`codeflux prices set --provider anthropic --model {MODEL} --input R --output R --cache-read R "
            f"--cache-write R --currency USD`") in message
    assert server.requests == []  # nothing was sent


# ───────────────────────────────────────────────────────────────────────────── a multi-turn run


def test_turn_two_reads_what_turn_one_wrote_and_writes_its_own_turn_for_the_next(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway
) -> None:
    task_id = new_task(db, tmp_path)
    written = 5200  # what turn 1 wrote: tools + system + the first user turn
    server.enqueue(
        json_reply(anthropic_message(stop_reason="tool_use", content=[
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "calc.py"}}],
            usage={"input_tokens": 0, "output_tokens": 40, "cache_read_input_tokens": 0,
                   "cache_creation_input_tokens": written})),
        json_reply(anthropic_message(content=[{"type": "text", "text": "Fixed."}], usage={
            "input_tokens": 0, "output_tokens": 30, "cache_read_input_tokens": written,
            "cache_creation_input_tokens": 60})),
        json_reply(anthropic_message(content=[{"type": "text", "text": "Green."}], usage={
            "input_tokens": 0, "output_tokens": 5, "cache_read_input_tokens": written + 60,
            "cache_creation_input_tokens": 20})),
    )  # fmt: skip

    one = gateway.call(task_id, first_turn(), position=START, idempotency_key="turn-1")
    assert [call.call_id for call in one.reply.tool_calls] == ["toolu_01A"]
    two = gateway.call(task_id, second_turn(), position=START, idempotency_key="turn-2")

    third_turn = ModelRequest(model="chosen-by-the-rung", system=SYSTEM, tools=TOOLS, max_output_tokens=1024,
                              messages=(*second_turn().messages, Message(role=Role.ASSISTANT, parts=two.reply.parts),
                                        Message.user_text("Now run the tests.")))
    three = gateway.call(task_id, third_turn, position=START, idempotency_key="turn-3")

    first, second, third = (request.json() for request in server.requests)
    # Turn 1 marks the tools, the system prompt and its conversation's end.
    assert [marked(message["content"]) for message in first["messages"]] == [[0]]
    # Turn 2 sends turn 1's prefix byte for byte — tools, system and the first user turn, marks included — and
    # marks that same block again (the read), plus its own newest turn (the write for turn 3).
    assert second["tools"] == first["tools"] and second["system"] == first["system"]
    assert second["messages"][0] == first["messages"][0]
    assert [marked(message["content"]) for message in second["messages"]] == [[0], [], [0]]
    # Turn 3 moves on: turn 2's end (the tool result) is read, the newest user turn written; turn 1's mark
    # is gone (within 4 breakpoints: tools, system, two in the conversation).
    assert [marked(message["content"]) for message in third["messages"]] == [[], [], [0], [], [0]]
    assert third["messages"][2] == second["messages"][2]
    assert len(marks_in(third)) == CACHE_BREAKPOINT_LIMIT
    assert three.cost == Money(minor=ceil((written + 60) * CACHE_READ + 20 * CACHE_WRITE + 5 * OUTPUT), currency=USD)
    # Priced at the cache rates: turn 1 a write, turn 2 a read of it plus its own small write.
    assert one.cost == Money(minor=ceil(written * CACHE_WRITE + 40 * OUTPUT), currency=USD)
    assert two.cost == Money(minor=ceil(written * CACHE_READ + 60 * CACHE_WRITE + 30 * OUTPUT), currency=USD)
    # Cheaper than sending the prefix uncached.
    assert isinstance(two.cost, Money) and two.cost.minor < ceil(written * INPUT + 30 * OUTPUT)
