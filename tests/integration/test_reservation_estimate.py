"""Issue 21 item 6 (reservation): a long conversation fits the default $1 budget it would really cost
under, because the gateway reserves a calibrated token bound, not one token per byte. The Anthropic route
asks for prompt caching, so the bound is reserved at the cache-write rate (the dearest input rate).

The conversation is ≈230 KiB of the calibration sample (``tests/fixtures/token_calibration.json``: the
repository's prompts, tool schemas, sources and docs with their measured token counts). The loopback
server speaks the Anthropic Messages wire and reports as input tokens the measured count of what was
sent. claude-sonnet-4-5 costs 3.00 / 15.00 / 0.30 / 3.75 USD per million input / output / cache-read /
cache-write tokens.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.domain.budget import bound_input_tokens
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest, Role, TextPart
from codeflux.domain.money import USD, Money
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.redact import Redactor
from codeflux.store.database import Database
from codeflux.store.tasks import insert_task
from tests.fixtures.provider_servers import ProviderServer, anthropic_message, json_reply

pytestmark = pytest.mark.keyring

CALIBRATION = Path(__file__).resolve().parents[1] / "fixtures" / "token_calibration.json"
INPUT, OUTPUT, CACHE_WRITE = Fraction(3, 10_000), Fraction(15, 10_000), Fraction(3, 8000)
DEFAULT_BUDGET = Money(minor=100, currency=USD)
MAX_OUTPUT = 8192


def ceil(value: Fraction) -> int:
    return -(-value.numerator // value.denominator)


def long_conversation() -> tuple[ModelRequest, int]:
    """A ≈230 KiB conversation of calibration texts (alternating user and assistant turns) and the
    measured token count of its texts."""
    entries = json.loads(CALIBRATION.read_text(encoding="utf-8"))["texts"]
    texts: list[tuple[str, int]] = []
    size = 0
    for entry in itertools.cycle(entries):
        if size >= 230 * 1024:
            break
        texts.append((entry["text"], max(entry["counts"].values())))
        size += len(entry["text"].encode())
    messages = tuple(Message(role=Role.USER if i % 2 == 0 else Role.ASSISTANT, parts=(TextPart(text=text),))
                     for i, (text, _) in enumerate(texts))
    request = ModelRequest(model="chosen-by-the-rung", system="You are terse.", messages=messages,
                           max_output_tokens=MAX_OUTPUT)
    return request, sum(count for _, count in texts)


@pytest.fixture
def gateway(db: Database, server: ProviderServer, anthropic_key: str) -> Iterator[ModelGateway]:
    approve_model_endpoint(db, provider=ProviderName.ANTHROPIC, base_url=server.base_url)
    redactor = Redactor()
    with AnthropicAdapter(base_url=server.base_url, redactor=redactor) as adapter:
        yield ModelGateway(db, [ModelRoute(provider="anthropic", adapter=adapter, cheap_model="claude-sonnet-4-5",
                                           capable_model="claude-opus-4-5", redactor=redactor)])


def test_a_230_kib_conversation_is_reserved_within_the_default_budget_and_charged_what_it_used(
    db: Database, tmp_path: Path, server: ProviderServer, gateway: ModelGateway
) -> None:
    request, measured = long_conversation()
    size = sum(len(part.text.encode()) for message in request.messages for part in message.parts
               if isinstance(part, TextPart))
    assert 225 * 1024 <= size <= 260 * 1024
    # The old rule (one token per byte, at the cache-write rate) could not reserve it within $1 …
    assert ceil(size * CACHE_WRITE + MAX_OUTPUT * OUTPUT) > DEFAULT_BUDGET.minor
    # … the estimate is a bound of the measured count, and not much more.
    estimate = bound_input_tokens(request)
    assert measured <= estimate <= measured * 3 // 2

    task_id = TaskId.from_entropy(bytes(range(16)))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "repo",
                                    worktree=tmp_path / "worktree", state=TaskState.RUNNING))
    BudgetService(db).set_budget(task_id, hard_limit=DEFAULT_BUDGET, expected_revision=None, idempotency_key="b")
    server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "Done."}], usage={
        "input_tokens": measured, "output_tokens": 300, "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0})))

    reply = gateway.call(task_id, request, position=LadderPosition.start(), idempotency_key="long-1")

    assert len(server.requests) == 1
    # Reserved at the cache-write rate (the route asks for prompt caching), still well within $1.
    assert reply.reserved == Money(minor=ceil(estimate * CACHE_WRITE + MAX_OUTPUT * OUTPUT), currency=USD)
    assert reply.charged == Money(minor=ceil(measured * INPUT + 300 * OUTPUT), currency=USD)
    assert reply.overrun is None and reply.budget.reserved == Money.zero(USD)
    assert reply.budget.spent == reply.charged and reply.budget.spent.minor < 30
