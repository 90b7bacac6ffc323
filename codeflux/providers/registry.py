"""Building a model adapter by provider name: the one place outside the gateway that constructs one.

Callers (the CLI, later the coordinator's settings) name a provider; the adapter itself is only ever
*called* by ``codeflux/coordinator/spending/gateway.py`` (a test scans the codebase for that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codeflux.credentials import load_provider_key
from codeflux.domain.errors import UsageError
from codeflux.domain.providers import ProviderName
from codeflux.domain.user_config import ConfiguredNetwork
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.providers.endpoints import DEFAULT_BASE_URLS
from codeflux.providers.network import network_policy
from codeflux.providers.openai import OpenAIAdapter
from codeflux.providers.openai_compatible import OpenAICompatibleAdapter
from codeflux.providers.scripted import ScriptedAdapter, ScriptedTurn
from codeflux.providers.transport import HttpPolicy
from codeflux.providers.wire import KeyLoader, ModelAdapter

__all__ = ["build_model_adapter", "build_scripted_adapter"]


def build_model_adapter(provider: str, *, base_url: str | None = None, uses_key: bool = True,
                        key_loader: KeyLoader = load_provider_key, network: ConfiguredNetwork | None = None,
                        environ: Mapping[str, str] | None = None) -> ModelAdapter:
    """The adapter for ``provider`` (``anthropic``, ``openai`` or ``openai-compatible``); it fetches its key
    through ``key_loader`` (the coordinator passes the keys it holds for the run:
    :func:`codeflux.coordinator.provider_keys.key_loader`) and takes the route ``network`` (the config file's
    ``[network]``; proxy variables read from ``environ`` only when it says so: :mod:`codeflux.providers.network`)."""
    def policy(endpoint: str) -> HttpPolicy:
        return network_policy(None, network, endpoint=endpoint, environ=environ or {})

    if provider == "anthropic":  # a base URL: a proxy speaking the provider's API (approved before the first call)
        endpoint = base_url or DEFAULT_BASE_URLS[ProviderName.ANTHROPIC]
        return AnthropicAdapter(base_url=endpoint, key_loader=key_loader, policy=policy(endpoint))
    if provider == "openai":
        endpoint = base_url or DEFAULT_BASE_URLS[ProviderName.OPENAI]
        return OpenAIAdapter(base_url=endpoint, key_loader=key_loader, policy=policy(endpoint))
    if provider == "openai-compatible":
        if not base_url:
            raise UsageError("the openai-compatible provider needs a base URL (--base-url)")
        return OpenAICompatibleAdapter(base_url=base_url, uses_key=uses_key, key_loader=key_loader,
                                       policy=policy(base_url))
    raise UsageError(f"unknown provider {provider!r}; choose anthropic, openai or openai-compatible")


def build_scripted_adapter(turns: Sequence[ScriptedTurn]) -> ScriptedAdapter:
    """The scripted provider (not a model): replays ``turns`` in order."""
    return ScriptedAdapter(list(turns))
