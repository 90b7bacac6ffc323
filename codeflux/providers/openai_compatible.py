"""OpenAI-compatible servers (Ollama, vLLM, llama.cpp's server): the Chat Completions wire at a base URL
the user gives, such as ``http://127.0.0.1:11434/v1``.

There is no default endpoint: the base URL is required, and like every non-default endpoint it is used
only after the user approved it. Plain http is accepted for loopback hosts only. Local servers often
need no key, so ``uses_key`` is explicit; when it is true the key is the ``openai-compatible`` entry of
the OS credential store. The older ``max_tokens`` field is sent (every such server knows it), and no
``reasoning_effort``, which these servers reject or ignore. Such servers (LiteLLM, vLLM, Ollama) send usage
without ``prompt_tokens_details``: the endpoint is taken as one that does not report caching, so cache
reads are 0 (said in each call's record) rather than unknown — otherwise every call would be an unknown
charge that pauses the run, and its tokens would count at the reservation bound.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from codeflux.credentials import load_provider_key
from codeflux.domain.providers import ProviderName
from codeflux.providers.endpoints import normalize_base_url
from codeflux.providers.openai import ChatCompletionsAdapter
from codeflux.providers.transport import HttpPolicy, ProviderHttp
from codeflux.providers.wire import KeyLoader
from codeflux.redact import Redactor

__all__ = ["OpenAICompatibleAdapter"]


class OpenAICompatibleAdapter(ChatCompletionsAdapter):
    """A local or self-hosted server speaking Chat Completions; shown as ``OpenAI-compatible (host:port)``."""

    def __init__(
        self,
        *,
        base_url: str,
        uses_key: bool,
        key_loader: KeyLoader = load_provider_key,
        redactor: Redactor | None = None,
        http: ProviderHttp | None = None,
        policy: HttpPolicy | None = None,
    ) -> None:
        normalized = normalize_base_url(ProviderName.OPENAI_COMPATIBLE, base_url)
        super().__init__(
            provider=ProviderName.OPENAI_COMPATIBLE,
            display_name=f"OpenAI-compatible ({urlsplit(normalized).netloc})",
            base_url=normalized,
            wire_max_tokens_field="max_tokens",
            sends_reasoning_effort=False,
            uses_key=uses_key,
            reports_cache=False,
            key_loader=key_loader,
            redactor=redactor,
            http=http,
            policy=policy,
        )
