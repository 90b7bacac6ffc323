"""HTTP for provider adapters: one hardened httpx client, bounded reads, retries, and error mapping.

- ``trust_env=False``: proxy variables, ``.netrc`` and ``SSL_CERT_*`` from the environment are ignored;
  a prompt and a key go straight to the endpoint the user approved — unless the config file's ``[network]``
  table opts in (:mod:`codeflux.providers.network` resolves it into :attr:`HttpPolicy.proxy_url` and
  :attr:`HttpPolicy.ca_bundle`): a proxy changes the route, never the endpoint, and a CA bundle adds trusted
  certificates to the usual ones (certifi's). A certificate the client does not trust is refused, saying so.
- ``follow_redirects=False``: a 3xx answer is refused (:class:`ProviderReplyInvalidError`, problem
  ``redirect``) and its ``Location`` is never shown.
- Bounded: a JSON body above :attr:`HttpPolicy.max_response_bytes`, a stream above
  ``max_stream_bytes``, an SSE event above ``max_event_bytes`` or a call past ``total_timeout_s`` is
  refused while reading (decoded bytes are counted, so a compressed bomb is caught too). Error bodies
  are read up to ``max_error_bytes`` and only a redacted, single-line message is kept.
- Timeouts: connect, read (between bytes), write and a total deadline.

**Retries.** A call is retried (up to ``max_attempts`` in all) only when the provider cannot have
processed it or says it did not:

- the connection was never made (connect error or timeout, no free connection): nothing was sent;
- the provider answered ``x-should-retry: true``, or, without that header, one of the statuses its
  documentation and official SDKs declare retryable — 408, 429, 500, 502, 503, 504 and Anthropic's
  529 — which are answered instead of processing the request. ``x-should-retry: false`` always wins.

The wait is the provider's ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date) when it
sends one, else exponential backoff (``backoff_base_s`` doubling per attempt, at most
``backoff_cap_s``) with jitter (a random 50–100 % of it). A ``Retry-After`` longer than
``retry_after_cap_s`` is not waited for: the call fails at once with
:class:`ProviderUnavailableError` naming the requested wait.

How long: the waits of one call add up to at most ``retry_wait_total_s`` (a minute): a rate limit or an
overloaded server (429/5xx without ``Retry-After``: LiteLLM, vLLM and Ollama seldom send one) is ridden
out for up to a minute, the last wait cut to what is left, before the call fails (and the run pauses) —
at most ``max_attempts`` attempts. A ``Retry-After`` longer than what is left of that minute is not
waited for either. A connection that could not be made at all is tried only ``max_connect_attempts``
times: a server that is not running is reported at once.

The provider's request id is read from the header its adapter names first, then the common variants
(:data:`REQUEST_ID_HEADERS`: ``x-request-id``, ``request-id``, ``openai-request-id``,
``x-litellm-call-id``…), so calls through a proxy keep an id to quote to its operator.

An error body is read for its message in the shapes servers use: ``{"error": {"message": …}}``
(OpenAI, Anthropic, LiteLLM), ``{"error": "…"}`` (Ollama), ``{"message": …}`` and ``{"detail": …}``
(FastAPI servers such as vLLM, with a string or a list of ``{"msg": …}``). A 404 from a URL with no
``/v1`` in its path says so: an OpenAI-compatible base URL usually ends in ``/v1``.

Everything else after the request may have reached the provider — a write or read error, a read
timeout, a connection closed mid-reply, a stream cut before its final event — is
:class:`ProviderOutcomeUnknownError` and is never retried: the provider may have done, and billed,
the work. Every httpx exception stops here (:func:`provider_error_for`).
"""

from __future__ import annotations

import json
import random
import re
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from typing import Final, TypeVar
from urllib.parse import urlsplit

import httpx

from codeflux.domain.errors import (
    ContextTooLongError,
    InvalidValueError,
    ProviderError,
    ProviderOutcomeUnknownError,
    ProviderRejectedError,
    ProviderReplyInvalidError,
    ProviderUnavailableError,
)
from codeflux.redact import Redactor

__all__ = [
    "REQUEST_ID_HEADERS",
    "HttpPolicy",
    "ProviderHttp",
    "ProviderResponse",
    "is_context_too_long",
    "provider_error_for",
]

T = TypeVar("T")
KIB: Final = 1024
MIB: Final = 1024 * KIB
RETRYABLE_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504, 529})
_NOT_SENT: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.ProxyError)
_DETAIL_LENGTH: Final = 300
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f\s]+")
REQUEST_ID_HEADERS: Final = (
    "x-request-id", "request-id", "openai-request-id", "x-litellm-call-id", "x-vllm-request-id",
    "x-amzn-requestid", "x-amz-request-id", "x-ms-request-id", "apim-request-id", "x-correlation-id",
)  # fmt: skip
_REQUEST_ID: Final = re.compile(r"[\x21-\x7e]{1,256}")
_UNTRUSTED: Final = ("the request was not sent: the server's TLS certificate is not trusted (a TLS-inspecting "
                     "proxy or a private CA needs its certificates in the config file's [network] ca_bundle)")
_NO_V1_HINT: Final = ("; the base URL has no /v1 — OpenAI-compatible servers (LiteLLM, vLLM, Ollama) serve "
                      "under it, e.g. http://127.0.0.1:4000/v1")


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpPolicy:
    """Limits of one adapter's HTTP use (seconds and bytes)."""

    connect_timeout_s: float = 10.0
    read_timeout_s: float = 300.0
    write_timeout_s: float = 60.0
    total_timeout_s: float = 1800.0
    max_request_bytes: int = 8 * MIB
    max_response_bytes: int = 8 * MIB
    max_stream_bytes: int = 64 * MIB
    max_event_bytes: int = MIB
    max_error_bytes: int = 64 * KIB
    max_attempts: int = 9
    max_connect_attempts: int = 4
    retry_wait_total_s: float = 60.0
    retry_after_cap_s: float = 60.0
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 20.0
    proxy_url: str | None = None
    """The proxy every request of this adapter goes through (None: straight to the endpoint)."""
    ca_bundle: str | None = None
    """A PEM file of certificates trusted besides certifi's (None: certifi's only)."""


class ProviderResponse:
    """A 2xx response being read: its headers, and its body as bounded chunks (see :meth:`chunks`)."""

    def __init__(self, response: httpx.Response, *, provider: str, policy: HttpPolicy, deadline: float) -> None:
        self._response = response
        self._provider = provider
        self._policy = policy
        self._deadline = deadline

    def header(self, name: str) -> str | None:
        value: str | None = self._response.headers.get(name)
        return value

    def request_id(self, *preferred: str) -> str | None:
        """The provider's id for this call: the first of ``preferred`` then :data:`REQUEST_ID_HEADERS` that
        the response carries as a printable token (at most 256 characters), else None."""
        for name in (*preferred, *REQUEST_ID_HEADERS):
            value = (self.header(name) or "").strip()
            if _REQUEST_ID.fullmatch(value):
                return value
        return None

    def chunks(self, *, limit: int) -> Iterator[bytes]:
        """The decoded body in chunks; more than ``limit`` bytes or past the deadline is refused."""
        seen = 0
        try:
            for chunk in self._response.iter_bytes():
                seen += len(chunk)
                if seen > limit:
                    raise ProviderReplyInvalidError(
                        provider=self._provider,
                        problem="too-large",
                        detail=f"the reply is larger than {limit} bytes",
                        may_have_been_processed=True,
                    )
                if time.monotonic() > self._deadline:
                    raise ProviderOutcomeUnknownError(provider=self._provider, reason="the call ran past its deadline")
                yield chunk
        except httpx.HTTPError as exc:
            raise provider_error_for(exc, provider=self._provider) from exc

    def read_body(self) -> bytes:
        """The whole body, at most ``max_response_bytes`` (a larger declared length is refused at once)."""
        declared = self._response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._policy.max_response_bytes:
            raise _invalid(
                self._provider,
                "too-large",
                f"the reply declares {declared} bytes; the limit is {self._policy.max_response_bytes}",
                processed=True,
            )
        return b"".join(self.chunks(limit=self._policy.max_response_bytes))


class ProviderHttp:
    """The one HTTP client of an adapter. ``sleep``, ``jitter`` and ``now`` are injectable for tests."""

    def __init__(
        self,
        *,
        provider: str,
        redactor: Redactor,
        policy: HttpPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._provider = provider
        self._redactor = redactor
        self._policy = policy or HttpPolicy()
        self._sleep = sleep
        self._jitter = jitter
        self._now = now
        timeout = httpx.Timeout(
            connect=self._policy.connect_timeout_s,
            read=self._policy.read_timeout_s,
            write=self._policy.write_timeout_s,
            pool=self._policy.connect_timeout_s,
        )
        self._client: httpx.Client | None = httpx.Client(
            trust_env=False, follow_redirects=False, timeout=timeout, proxy=self._policy.proxy_url,
            verify=_trusted(self._policy.ca_bundle))

    @property
    def policy(self) -> HttpPolicy:
        return self._policy

    def close(self) -> None:
        """Close the connection pool; idempotent. Calls after it fail with ProviderUnavailableError."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def post(self, url: str, *, headers: Mapping[str, str], body: bytes, read: Callable[[ProviderResponse], T]) -> T:
        """POST ``body`` to ``url`` with retries as documented, and give a 2xx response to ``read``."""
        return self._send("POST", url, headers=headers, body=body, read=read)

    def get(self, url: str, *, headers: Mapping[str, str], read: Callable[[ProviderResponse], T]) -> T:
        """GET ``url`` with the same retries, limits and error mapping as :meth:`post` (``provider test --live``
        lists models this way: a request that costs nothing)."""
        return self._send("GET", url, headers=headers, body=b"", read=read)

    def _send(self, method: str, url: str, *, headers: Mapping[str, str], body: bytes,
              read: Callable[[ProviderResponse], T]) -> T:
        client = self._client
        if client is None:
            raise ProviderUnavailableError(
                provider=self._provider, reason="the adapter was closed", status=None, attempts=0, retry_after_s=None
            )
        if len(body) > self._policy.max_request_bytes:
            raise ContextTooLongError(
                provider=self._provider,
                status=413,
                error_type=None,
                detail=f"the request is {len(body)} bytes; codeflux sends at most {self._policy.max_request_bytes}",
            )
        deadline = time.monotonic() + self._policy.total_timeout_s
        policy = self._policy
        attempt = 0
        waited = 0.0
        while True:
            attempt += 1
            outcome = self._attempt(client, method, url, headers=headers, body=body, read=read, deadline=deadline)
            if not isinstance(outcome, _Retry):
                return outcome
            limit = policy.max_attempts if outcome.status is not None else min(policy.max_attempts,
                                                                                policy.max_connect_attempts)
            left = policy.retry_wait_total_s - waited
            if outcome.final_now or outcome.refused_wait_s is not None or attempt >= limit or left <= 0:
                raise outcome.final(attempts=attempt)
            if outcome.delay_s is not None and outcome.delay_s > left:  # the provider asks more than is left
                raise replace(outcome, refused_wait_s=int(-(-outcome.delay_s // 1))).final(attempts=attempt)
            delay = outcome.delay_s if outcome.delay_s is not None else min(self._backoff(attempt), left)
            waited += delay
            self._sleep(delay)

    def _attempt(
        self,
        client: httpx.Client,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        read: Callable[[ProviderResponse], T],
        deadline: float,
    ) -> T | _Retry:
        try:
            request = client.build_request(method, url, headers=dict(headers), content=body if body else None)
            response = client.send(request, stream=True)
        except _NOT_SENT as exc:
            if _untrusted_certificate(exc):  # the same certificate again would be refused again: no retry
                return _Retry(provider=self._provider, reason=_UNTRUSTED, status=None, final_now=True)
            return _Retry(provider=self._provider, reason=f"cannot connect ({type(exc).__name__})", status=None)
        except httpx.HTTPError as exc:
            raise provider_error_for(exc, provider=self._provider) from exc
        try:
            status = response.status_code
            if 200 <= status < 300:
                return read(ProviderResponse(response, provider=self._provider, policy=self._policy, deadline=deadline))
            if 300 <= status < 400:
                raise ProviderReplyInvalidError(
                    provider=self._provider,
                    problem="redirect",
                    detail=f"HTTP {status}; codeflux does not follow redirects, check the base URL",
                    may_have_been_processed=False,
                )
            error_type, detail = self._error_detail(response)
            if status == 404 and "/v1" not in urlsplit(url).path:
                detail += _NO_V1_HINT
            reason = f"HTTP {status}: {detail}"
            if not self._should_retry(response):
                if status < 500:
                    rejected = ContextTooLongError if is_context_too_long(status, error_type, detail) else (
                        ProviderRejectedError)
                    raise rejected(provider=self._provider, status=status, error_type=error_type, detail=detail)
                return _Retry(provider=self._provider, reason=reason, status=status, final_now=True)
            wait = self._retry_after(response)
            if wait is not None and wait > self._policy.retry_after_cap_s:
                return _Retry(provider=self._provider, reason=reason, status=status, refused_wait_s=int(-(-wait // 1)))
            return _Retry(provider=self._provider, reason=reason, status=status, delay_s=wait)
        finally:
            response.close()

    def _should_retry(self, response: httpx.Response) -> bool:
        advice = str(response.headers.get("x-should-retry", "")).strip().lower()
        if advice in ("true", "false"):
            return advice == "true"
        return int(response.status_code) in RETRYABLE_STATUSES

    def _retry_after(self, response: httpx.Response) -> float | None:
        milliseconds = str(response.headers.get("retry-after-ms", "")).strip()
        if re.fullmatch(r"\d{1,9}(?:\.\d{1,3})?", milliseconds):
            return float(milliseconds) / 1000
        value = str(response.headers.get("retry-after", "")).strip()
        if re.fullmatch(r"\d{1,9}", value):
            return float(value)
        if value:
            try:
                when = parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
            wait: float = max(0.0, when.timestamp() - self._now())
            return wait
        return None

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self._policy.backoff_cap_s, self._policy.backoff_base_s * (1 << (attempt - 1)))
        return ceiling * (0.5 + 0.5 * self._jitter())

    def _error_detail(self, response: httpx.Response) -> tuple[str | None, str]:
        """The provider's error type and a redacted one-line message from a bounded error body."""
        body = bytearray()
        truncated = False
        try:
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > self._policy.max_error_bytes:
                    truncated = True
                    break
        except httpx.HTTPError:
            truncated = True
        if truncated:
            # A cut body could end inside a key the exact-match redactor would no longer recognise.
            return None, "the error body was not shown (too large or cut off)"
        text = body.decode("utf-8", errors="replace")
        error_type, message = _error_fields(text)
        message = self._redactor.redact(message)
        error_type = self._redactor.redact(error_type)[:64] if error_type else None
        line = _CONTROL.sub(" ", message).strip()
        return error_type, (line[:_DETAIL_LENGTH] + "…" if len(line) > _DETAIL_LENGTH else line) or "no message"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Retry:
    provider: str
    reason: str
    status: int | None
    delay_s: float | None = None
    refused_wait_s: int | None = None  # the provider asked for a wait longer than the cap
    final_now: bool = False  # a failure the provider said not to retry

    def final(self, *, attempts: int) -> ProviderUnavailableError:
        return ProviderUnavailableError(
            provider=self.provider,
            reason=self.reason,
            status=self.status,
            attempts=attempts,
            retry_after_s=self.refused_wait_s,
        )


_TOO_LONG: Final = re.compile(
    r"prompt is too long|context[ _]length|context window|maximum context|too many (?:input )?tokens"
    r"|input is too long|request_too_large|request too large|reduce the length", re.IGNORECASE)


def is_context_too_long(status: int, error_type: str | None, detail: str) -> bool:
    """Whether a refusal says the request does not fit the model's context window: HTTP 400 or 413 whose
    error type or message is one of the providers' words for it — Anthropic ``invalid_request_error`` "prompt
    is too long: N tokens > M maximum" (413 ``request_too_large`` for a body over its size limit), OpenAI
    ``context_length_exceeded`` "This model's maximum context length is N tokens…", and the like from
    OpenAI-compatible servers ("context window", "too many tokens")."""
    if status not in (400, 413):
        return False
    return status == 413 or _TOO_LONG.search(f"{error_type or ''} {detail}") is not None


def _error_fields(text: str) -> tuple[str | None, str]:
    try:
        value = json.loads(text)
    except ValueError:
        return None, text
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict):
        kind, message = error.get("type") or error.get("code"), error.get("message")
        return (kind if isinstance(kind, str) else None), (message if isinstance(message, str) else "")
    if isinstance(error, str):
        return None, error
    message = value.get("message") if isinstance(value, dict) else None
    if isinstance(message, str):
        return None, message
    return None, _detail_text(value.get("detail") if isinstance(value, dict) else None)


def _detail_text(detail: object) -> str:
    """FastAPI's ``detail``: a string, a ``{"message"|"msg": …}`` object, or a list of ``{"msg": …}``."""
    if isinstance(detail, str):
        return detail
    if isinstance(detail, dict):
        text = detail.get("message") or detail.get("msg")
        return text if isinstance(text, str) else ""
    if isinstance(detail, list):
        return "; ".join(text for item in detail[:5] if (text := _detail_text(item)))
    return ""


def _invalid(provider: str, problem: str, detail: str, *, processed: bool) -> ProviderReplyInvalidError:
    return ProviderReplyInvalidError(
        provider=provider, problem=problem, detail=detail, may_have_been_processed=processed
    )


def _trusted(ca_bundle: str | None) -> ssl.SSLContext | bool:
    """What the client verifies certificates against: certifi's roots, plus ``ca_bundle``'s when given (a file
    that cannot be read or holds no certificate is refused here, naming the setting)."""
    if ca_bundle is None:
        return True
    context = httpx.create_ssl_context(verify=True, trust_env=False)  # certifi's roots, as httpx's default
    try:
        context.load_verify_locations(cafile=ca_bundle)
    except (OSError, ssl.SSLError) as error:
        raise InvalidValueError(kind="setting [network] ca_bundle",
                                reason=f"{ca_bundle} cannot be used as PEM certificates ({type(error).__name__})"
                                ) from None
    return context


def _untrusted_certificate(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def provider_error_for(exc: httpx.HTTPError | httpx.InvalidURL, *, provider: str) -> ProviderError:
    """The codeflux error for an httpx exception met while calling ``provider`` (the caller chains it).

    Not sent (connect, proxy, pool, an invalid URL, a local protocol error) → unavailable; a redirect
    loop → reply invalid; a body that cannot be decoded → reply invalid (possibly billed); anything
    after sending began → outcome unknown.
    """
    name = type(exc).__name__
    if isinstance(exc, httpx.ConnectError) and _untrusted_certificate(exc):
        return ProviderUnavailableError(provider=provider, reason=_UNTRUSTED, status=None, attempts=1,
                                        retry_after_s=None)
    if isinstance(exc, (*_NOT_SENT, httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.InvalidURL)):
        reason = f"the request could not be sent ({name})"
        return ProviderUnavailableError(provider=provider, reason=reason, status=None, attempts=1, retry_after_s=None)
    if isinstance(exc, httpx.TooManyRedirects):
        return _invalid(provider, "redirect", "codeflux does not follow redirects", processed=False)
    if isinstance(exc, httpx.DecodingError):
        return _invalid(provider, "malformed", "the reply could not be decoded", processed=True)
    if isinstance(exc, httpx.TimeoutException):
        return ProviderOutcomeUnknownError(provider=provider, reason=f"the connection timed out after sending ({name})")
    return ProviderOutcomeUnknownError(provider=provider, reason=f"the connection failed after sending ({name})")
