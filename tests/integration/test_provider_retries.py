"""Retries, timeouts and proxies of provider HTTP, through the Anthropic adapter against a loopback server.

A call is retried only when the provider cannot have processed it or says so; waits are recorded by a
stand-in for ``time.sleep``, so the tests are fast and the exact waits are asserted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from email.utils import formatdate

import pytest

from codeflux.domain.errors import ProviderOutcomeUnknownError, ProviderUnavailableError
from codeflux.domain.models import Message, ModelRequest
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.providers.transport import HttpPolicy, ProviderHttp
from codeflux.redact import Redactor
from tests.fixtures.provider_servers import (
    ProviderServer,
    Reply,
    SleepRecorder,
    anthropic_message,
    json_reply,
)

FAST = HttpPolicy(backoff_base_s=0.25, backoff_cap_s=1.0, retry_after_cap_s=30.0, max_attempts=4)
FULL_USAGE = {"input_tokens": 20, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
REQUEST = ModelRequest(model="claude-haiku-4-5", system="", messages=(Message.user_text("hi"),))


@pytest.fixture
def adapter(server: ProviderServer, anthropic_key: str, waits: SleepRecorder) -> Iterator[AnthropicAdapter]:
    http = ProviderHttp(provider="Anthropic", redactor=Redactor(), policy=FAST, sleep=waits, jitter=lambda: 1.0)
    with AnthropicAdapter(base_url=server.base_url, http=http) as opened:
        yield opened


@pytest.mark.keyring
def test_a_429_with_retry_after_is_retried_after_exactly_that_wait(
    server: ProviderServer, adapter: AnthropicAdapter, waits: SleepRecorder
) -> None:
    rate_limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    server.enqueue(json_reply(rate_limited, status=429, headers=[("retry-after", "2")]),
                   json_reply(anthropic_message(content=[{"type": "text", "text": "ok"}], usage=FULL_USAGE)))

    assert adapter.complete(REQUEST).text == "ok"
    assert waits.waits == [2.0]
    assert len(server.requests) == 2


@pytest.mark.keyring
def test_a_retry_after_date_is_honoured(server: ProviderServer, anthropic_key: str, waits: SleepRecorder) -> None:
    now = 1_700_000_000.0
    http = ProviderHttp(provider="Anthropic", redactor=Redactor(), policy=FAST, sleep=waits, now=lambda: now)
    server.enqueue(json_reply({}, status=503, headers=[("retry-after", formatdate(now + 5, usegmt=True))]),
                   json_reply(anthropic_message(content=[{"type": "text", "text": "ok"}], usage=FULL_USAGE)))

    with AnthropicAdapter(base_url=server.base_url, http=http) as adapter:
        adapter.complete(REQUEST)

    assert waits.waits == [5.0]


@pytest.mark.keyring
def test_a_retry_after_beyond_the_cap_is_not_waited_for(
    server: ProviderServer, adapter: AnthropicAdapter, waits: SleepRecorder
) -> None:
    server.enqueue(json_reply({}, status=429, headers=[("retry-after", "3600")]))

    with pytest.raises(ProviderUnavailableError) as raised:
        adapter.complete(REQUEST)

    assert raised.value.retry_after_s == 3600 and raised.value.status == 429
    assert not raised.value.may_have_been_processed
    assert waits.waits == [] and len(server.requests) == 1


@pytest.mark.keyring
def test_repeated_500s_are_retried_with_capped_exponential_backoff_then_reported_unavailable(
    server: ProviderServer, adapter: AnthropicAdapter, waits: SleepRecorder
) -> None:
    failing = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    server.enqueue(*[json_reply(failing, status=500)] * 4)

    with pytest.raises(ProviderUnavailableError) as raised:
        adapter.complete(REQUEST)

    assert raised.value.attempts == 4 and raised.value.status == 500
    assert "Internal server error" in str(raised.value)
    assert waits.waits == [0.25, 0.5, 1.0]  # jitter pinned at its top; the cap is 1 s
    assert len(server.requests) == 4


@pytest.mark.keyring
def test_the_provider_can_forbid_a_retry(server: ProviderServer, adapter: AnthropicAdapter) -> None:
    server.enqueue(json_reply({}, status=503, headers=[("x-should-retry", "false")]))

    with pytest.raises(ProviderUnavailableError):
        adapter.complete(REQUEST)

    assert len(server.requests) == 1


@pytest.mark.keyring
def test_a_read_timeout_after_sending_is_an_unknown_outcome_and_not_retried(
    server: ProviderServer, anthropic_key: str
) -> None:
    slow = Reply(headers=[("content-type", "application/json")], delay_s=1.0,
                 chunks=[json.dumps(anthropic_message(content=[], usage=FULL_USAGE)).encode()])  # fmt: skip
    server.enqueue(slow)

    with AnthropicAdapter(base_url=server.base_url, policy=HttpPolicy(read_timeout_s=0.2)) as adapter, pytest.raises(
        ProviderOutcomeUnknownError
    ):  # fmt: skip
        adapter.complete(REQUEST)

    assert len(server.requests) == 1


@pytest.mark.keyring
def test_a_refused_connection_is_retried_then_unavailable_and_never_billed(
    anthropic_key: str, waits: SleepRecorder
) -> None:
    with ProviderServer() as gone:
        url = gone.base_url
    http = ProviderHttp(provider="Anthropic", redactor=Redactor(), policy=FAST, sleep=waits, jitter=lambda: 0.0)

    with AnthropicAdapter(base_url=url, http=http) as adapter, pytest.raises(ProviderUnavailableError) as raised:
        adapter.complete(REQUEST)

    assert raised.value.attempts == 4 and not raised.value.may_have_been_processed
    assert waits.waits == [0.125, 0.25, 0.5]


@pytest.mark.keyring
def test_proxy_environment_variables_are_ignored(
    server: ProviderServer, adapter: AnthropicAdapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "direct"}], usage=FULL_USAGE)))

    assert adapter.complete(REQUEST).text == "direct"
