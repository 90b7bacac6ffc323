"""Every httpx exception is mapped to the ProviderError family, by whether the request may have been processed."""

from __future__ import annotations

import httpx
import pytest

from codeflux.domain.errors import (
    ContextTooLongError,
    ProviderError,
    ProviderOutcomeUnknownError,
    ProviderRejectedError,
    ProviderReplyInvalidError,
    ProviderUnavailableError,
)
from codeflux.providers.transport import HttpPolicy, ProviderHttp, is_context_too_long, provider_error_for
from codeflux.redact import Redactor
from tests.fixtures.provider_servers import ProviderServer, json_reply


def _all_subclasses(cls: type[BaseException]) -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_all_subclasses(sub)]
    return found


HTTPX_ERRORS = sorted({*_all_subclasses(httpx.HTTPError), httpx.HTTPError, httpx.InvalidURL}, key=lambda c: c.__name__)


def _instance(cls: type[BaseException]) -> httpx.HTTPError | httpx.InvalidURL:
    request = httpx.Request("POST", "https://api.example.com/v1")
    if cls is httpx.HTTPStatusError:
        return httpx.HTTPStatusError("boom", request=request, response=httpx.Response(500, request=request))
    if cls is httpx.InvalidURL:
        return httpx.InvalidURL("boom")
    if cls is httpx.HTTPError:
        return httpx.HTTPError("boom")
    return cls("boom", request=request)  # type: ignore[call-arg,return-value]


@pytest.mark.parametrize("cls", HTTPX_ERRORS, ids=lambda c: c.__name__)
def test_no_httpx_exception_is_left_unmapped(cls: type[BaseException]) -> None:
    error = provider_error_for(_instance(cls), provider="Anthropic")
    assert isinstance(error, ProviderError) and error.provider == "Anthropic"


@pytest.mark.parametrize(
    ("cls", "expected", "processed"),
    [
        (httpx.ConnectError, ProviderUnavailableError, False),
        (httpx.ConnectTimeout, ProviderUnavailableError, False),
        (httpx.PoolTimeout, ProviderUnavailableError, False),
        (httpx.ProxyError, ProviderUnavailableError, False),
        (httpx.UnsupportedProtocol, ProviderUnavailableError, False),
        (httpx.TooManyRedirects, ProviderReplyInvalidError, False),
        (httpx.DecodingError, ProviderReplyInvalidError, True),
        (httpx.WriteError, ProviderOutcomeUnknownError, True),
        (httpx.WriteTimeout, ProviderOutcomeUnknownError, True),
        (httpx.ReadError, ProviderOutcomeUnknownError, True),
        (httpx.ReadTimeout, ProviderOutcomeUnknownError, True),
        (httpx.RemoteProtocolError, ProviderOutcomeUnknownError, True),
    ],
)
def test_only_failures_before_sending_are_safe_to_retry(
    cls: type[BaseException], expected: type[ProviderError], processed: bool
) -> None:
    error = provider_error_for(_instance(cls), provider="OpenAI")
    assert type(error) is expected
    assert error.may_have_been_processed is processed


def test_a_closed_client_refuses_calls_and_closing_twice_is_fine() -> None:
    http = ProviderHttp(provider="OpenAI", redactor=Redactor(), policy=HttpPolicy())
    http.close()
    http.close()
    with pytest.raises(ProviderUnavailableError, match="closed"):
        http.post("https://api.example.com/v1", headers={}, body=b"{}", read=lambda response: None)


def test_an_oversize_request_is_refused_before_anything_is_sent() -> None:
    http = ProviderHttp(provider="OpenAI", redactor=Redactor(), policy=HttpPolicy(max_request_bytes=10))
    try:
        with pytest.raises(ProviderError, match="at most 10") as raised:
            http.post("https://api.example.com/v1", headers={}, body=b"x" * 11, read=lambda response: None)
        assert not raised.value.may_have_been_processed
    finally:
        http.close()


# ─── "too long" refusals (issue 15 item 8) ──────────────────────────────────────────────────────────────

TOO_LONG_BODIES = [  # the providers' own words, as their 400s carry them
    (400, {"type": "error", "error": {"type": "invalid_request_error",
                                      "message": "prompt is too long: 208310 tokens > 200000 maximum"}}),
    (400, {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                                "resulted in 130412 tokens. Please reduce the length of the messages.",
                     "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
    (400, {"error": {"message": "Input is too long for requested model.", "type": "BadRequestError"}}),
    (400, {"error": {"message": "the request exceeds the available context size, try increasing the context "
                                "window", "type": "exceed_context_size_error"}}),
    (413, {"type": "error", "error": {"type": "request_too_large", "message": "Request exceeds the maximum size"}}),
]
OTHER_REFUSALS = [
    (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: 16000 > 8192, which "
                                      "is the maximum allowed number of output tokens for claude-3-5-sonnet"}}),
    (400, {"error": {"message": "Unrecognized request argument supplied: reasoning_effort",
                     "type": "invalid_request_error"}}),
    (401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
]


def _refusal(status: int, body: object) -> ProviderRejectedError:
    with ProviderServer() as server:
        http = ProviderHttp(provider="Anthropic", redactor=Redactor())
        server.enqueue(json_reply(body, status=status))
        with pytest.raises(ProviderRejectedError) as raised:
            http.post(f"{server.base_url}/v1/messages", headers={}, body=b"{}", read=lambda response: None)
        http.close()  # before the server closes: a kept-alive connection would hold its thread
    return raised.value


@pytest.mark.parametrize(("status", "body"), TOO_LONG_BODIES)
def test_a_refusal_for_a_request_over_the_context_window_is_a_context_too_long_error(
        status: int, body: object) -> None:
    """A real loopback server answers as each provider does; the transport types the refusal, nothing was
    processed, and the loop can compact and ask again instead of failing."""
    error = _refusal(status, body)
    assert isinstance(error, ContextTooLongError) and error.status == status
    assert not error.may_have_been_processed


@pytest.mark.parametrize(("status", "body"), OTHER_REFUSALS)
def test_other_refusals_stay_plain_rejections(status: int, body: object) -> None:
    assert not isinstance(_refusal(status, body), ContextTooLongError)


def test_a_body_over_the_size_codeflux_sends_is_too_long_before_anything_is_sent() -> None:
    http = ProviderHttp(provider="OpenAI", redactor=Redactor(), policy=HttpPolicy(max_request_bytes=1024))
    with pytest.raises(ContextTooLongError) as raised:
        http.post("http://127.0.0.1:9/", headers={}, body=b"x" * 2048, read=lambda response: None)
    http.close()
    assert raised.value.status == 413 and not is_context_too_long(401, None, "prompt is too long")
