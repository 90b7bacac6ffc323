"""Every httpx exception is mapped to the ProviderError family, by whether the request may have been processed."""

from __future__ import annotations

import httpx
import pytest

from codeflux.domain.errors import (
    ProviderError,
    ProviderOutcomeUnknownError,
    ProviderReplyInvalidError,
    ProviderUnavailableError,
)
from codeflux.providers.transport import HttpPolicy, ProviderHttp, provider_error_for
from codeflux.redact import Redactor


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
