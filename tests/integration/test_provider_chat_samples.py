"""Issue 21 items 6 and 7: the Chat Completions adapter checked against OpenAI's own documented examples
(``tests/data/provider_wire/openai_chat_completions.json``, "from documentation, not recorded", with URL
and date) on a loopback server: the request bodies have the documented shape, and the documented replies
map to parts and usage — cached input (``prompt_tokens_details.cached_tokens``) as cache reads, priced at
the cached-input rate. Keys come from the real Secret Service; the database is a real migrated file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import keyring.backend
import pytest

from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest, StopReason, ToolCall, ToolSpec
from codeflux.domain.money import USD, Money, UnknownCost
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.providers.openai import OpenAIAdapter
from codeflux.providers.prices import default_price_snapshot
from codeflux.redact import Redactor
from codeflux.store.database import Database
from codeflux.store.tasks import insert_task
from tests.fixtures.provider_servers import ProviderServer, a_test_key, json_reply

pytestmark = pytest.mark.keyring

SAMPLES_FILE = Path(__file__).resolve().parents[1] / "data" / "provider_wire" / "openai_chat_completions.json"


def sample(name: str) -> dict[str, Any]:
    data = json.loads(SAMPLES_FILE.read_text(encoding="utf-8"))
    assert data["label"] == "from documentation, not recorded" and data["transcribed_on"] == "2026-12-03"
    chosen: dict[str, Any] = data["samples"][name]
    assert chosen["source"].startswith("https://platform.openai.com/docs/api-reference/chat/create")
    body: dict[str, Any] = chosen["body"]
    return body


@pytest.fixture
def openai(server: ProviderServer, secret_service: keyring.backend.KeyringBackend) -> Iterator[OpenAIAdapter]:
    store_provider_key(ProviderName.OPENAI, Secret(a_test_key()))
    with OpenAIAdapter(base_url=server.base_url, redactor=Redactor()) as adapter:
        yield adapter


def test_the_documented_function_call_request_and_reply(server: ProviderServer, openai: OpenAIAdapter) -> None:
    documented = sample("functions_request")
    tool = documented["tools"][0]["function"]
    server.enqueue(json_reply(sample("functions_response")))

    reply = openai.complete(ModelRequest(
        model="gpt-5", system="", messages=(Message.user_text(documented["messages"][0]["content"]),),
        tools=(ToolSpec(name=tool["name"], description=tool["description"],
                        input_schema_json=json.dumps(tool["parameters"])),),
    ))  # fmt: skip

    body = server.requests[0].json()
    assert server.requests[0].path == "/chat/completions"
    assert body["messages"] == documented["messages"] and body["tools"] == documented["tools"]
    assert reply.tool_calls == (ToolCall(call_id="call_abc123", name="get_current_weather",
                                         arguments_json='{\n"location": "Boston, MA"\n}'),)
    assert reply.stop_reason is StopReason.TOOL_USE
    # OpenAI's own endpoint reports caching, so a reply without prompt_tokens_details leaves the cache reads
    # unknown (never 0), and with them the cost at gpt-5's non-zero cached-input rate.
    assert reply.usage == TokenUsage(input_tokens=82, output_tokens=17, cache_read_tokens=None, cache_write_tokens=0,
                                     reasoning_tokens=0)
    snapshot = default_price_snapshot(ProviderName.OPENAI, "gpt-5")
    assert snapshot is not None and isinstance(snapshot.price.cost_of(reply.usage, model="gpt-5"), UnknownCost)


def test_the_documented_default_reply_and_its_cached_input_priced_at_the_cached_rate(
    db: Database, tmp_path: Path, server: ProviderServer, openai: OpenAIAdapter
) -> None:
    documented = sample("default_request")
    reply_body = sample("default_response")
    assert reply_body["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    cached_reply = json.loads(json.dumps(reply_body))
    cached_reply["usage"]["prompt_tokens"], cached_reply["usage"]["prompt_tokens_details"]["cached_tokens"] = 4096, 3968
    server.enqueue(json_reply(reply_body), json_reply(cached_reply))
    approve_model_endpoint(db, provider=ProviderName.OPENAI, base_url=server.base_url)
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "repo",
                                    worktree=tmp_path / "worktree", state=TaskState.RUNNING))
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=100, currency=USD), expected_revision=None,
                                 idempotency_key="budget-1")
    gateway = ModelGateway(db, [ModelRoute(provider="openai", adapter=openai, cheap_model="gpt-5",
                                           capable_model="gpt-5")])
    request = ModelRequest(model="chosen", system=documented["messages"][0]["content"],
                           messages=(Message.user_text(documented["messages"][1]["content"]),), max_output_tokens=64)

    first = gateway.call(task_id, request, position=LadderPosition.start(), idempotency_key="call-1")
    second = gateway.call(task_id, request, position=LadderPosition.start(), idempotency_key="call-2")

    body = server.requests[0].json()
    # The documented conversation: the instructions, then the user's message (sent as "system", which the
    # reference's "developer" role replaces for newer models; both are accepted).
    assert body["messages"][1] == documented["messages"][1]
    assert body["messages"][0]["content"] == documented["messages"][0]["content"]
    assert body["messages"][0]["role"] in ("system", "developer")
    assert first.reply.text == "Hello! How can I assist you today?" and first.reply.stop_reason is StopReason.END_TURN
    assert first.reply.usage == TokenUsage(input_tokens=19, output_tokens=10, cache_read_tokens=0,
                                           cache_write_tokens=0, reasoning_tokens=0)
    # gpt-5: 1.25 input, 0.125 cached input, 10.00 output per million tokens.
    input_, cached, output = Fraction(125, 1_000_000), Fraction(125, 10_000_000), Fraction(1, 1000)
    assert second.reply.usage.cache_read_tokens == 3968 and second.reply.usage.input_tokens == 128
    exact = 128 * input_ + 3968 * cached + 10 * output
    assert exact < 4096 * input_ + 10 * output  # the cached part is cheaper
    assert second.cost == Money(minor=-(-exact.numerator // exact.denominator), currency=USD)
