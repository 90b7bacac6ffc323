"""The OpenAI adapter: Chat Completions (see :mod:`codeflux.providers.chat_completions` for why) with
``max_completion_tokens``, ``reasoning_effort`` for reasoning models only (the capability table,
:mod:`codeflux.providers.capabilities`) and streaming with ``stream_options.include_usage``; a model whose
row in that table says ``wire = responses`` goes to the Responses API instead
(:mod:`codeflux.providers.responses`), chosen per call by the request's model.

:class:`ChatCompletionsAdapter` is the one adapter class for this wire; the OpenAI-compatible adapter
is the same class configured for a local server.
"""

from __future__ import annotations

from typing import Self

from codeflux.credentials import Secret, load_provider_key
from codeflux.domain.models import ModelReply, ModelRequest
from codeflux.domain.providers import ProviderName
from codeflux.providers.capabilities import OpenAIWire, openai_wire
from codeflux.providers.chat_completions import ChatWire
from codeflux.providers.endpoints import DEFAULT_BASE_URLS, normalize_base_url
from codeflux.providers.responses import ResponsesWire
from codeflux.providers.transport import HttpPolicy, ProviderHttp, ProviderResponse
from codeflux.providers.wire import KeyLoader, TextSink, load_key_for_call
from codeflux.redact import Redactor, default_redactor

__all__ = ["ChatCompletionsAdapter", "OpenAIAdapter"]


class ChatCompletionsAdapter:
    """A provider speaking Chat Completions at ``{base_url}/chat/completions``.

    ``uses_key`` says whether a key is sent (``Authorization: Bearer``); it is fetched from the OS
    credential store for ``provider`` at every call. ``responses_api``: models the capability table puts
    on the Responses API are sent to ``{base_url}/responses`` (OpenAI only; an OpenAI-compatible server
    speaks Chat Completions). Use as a context manager or call :meth:`close`.
    """

    def __init__(
        self,
        *,
        provider: ProviderName,
        display_name: str,
        base_url: str,
        wire_max_tokens_field: str,
        sends_reasoning_effort: bool,
        uses_key: bool,
        reports_cache: bool = True,
        responses_api: bool = False,
        key_loader: KeyLoader = load_provider_key,
        redactor: Redactor | None = None,
        http: ProviderHttp | None = None,
        policy: HttpPolicy | None = None,
    ) -> None:
        self.base_url = normalize_base_url(provider, base_url)
        self._provider = provider
        self._display_name = display_name
        self._uses_key = uses_key
        self._key_loader = key_loader
        self._redactor = redactor or default_redactor()
        self._http = http or ProviderHttp(provider=display_name, redactor=self._redactor, policy=policy)
        self._wire = ChatWire(
            provider=display_name, max_tokens_field=wire_max_tokens_field,
            sends_reasoning_effort=sends_reasoning_effort, reports_cache=reports_cache,
        )
        self._responses = ResponsesWire(provider=display_name) if responses_api else None

    @property
    def display_name(self) -> str:
        return self._display_name

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelReply:
        """Send ``request``; stream it when ``on_text`` is given."""
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if on_text is not None else "application/json",
        }
        if self._uses_key:
            key: Secret = load_key_for_call(self._provider, loader=self._key_loader, redactor=self._redactor)
            headers["authorization"] = f"Bearer {key.reveal()}"
        policy = self._http.policy
        wire: ChatWire | ResponsesWire = self._wire
        path = "/chat/completions"
        if self._responses is not None and openai_wire(request.model) is OpenAIWire.RESPONSES:
            wire, path = self._responses, "/responses"
        body = wire.request_body(request, stream=on_text is not None)

        def read(response: ProviderResponse) -> ModelReply:
            request_id = response.request_id("x-request-id")
            if on_text is None:
                return wire.reply_from_json(response.read_body(), request, request_id)
            return wire.reply_from_stream(
                response, request, request_id, on_text,
                max_stream_bytes=policy.max_stream_bytes, max_event_bytes=policy.max_event_bytes,
            )  # fmt: skip

        return self._http.post(f"{self.base_url}{path}", headers=headers, body=body, read=read)


class OpenAIAdapter(ChatCompletionsAdapter):
    """OpenAI's models at ``https://api.openai.com/v1`` (or an approved base URL), key required."""

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URLS[ProviderName.OPENAI],
        key_loader: KeyLoader = load_provider_key,
        redactor: Redactor | None = None,
        http: ProviderHttp | None = None,
        policy: HttpPolicy | None = None,
    ) -> None:
        super().__init__(
            provider=ProviderName.OPENAI,
            display_name="OpenAI",
            base_url=base_url,
            wire_max_tokens_field="max_completion_tokens",
            sends_reasoning_effort=True,
            uses_key=True,
            responses_api=True,
            key_loader=key_loader,
            redactor=redactor,
            http=http,
            policy=policy,
        )
