"""``codeflux provider test --live``: one request that proves an endpoint answers and accepts the key, at no charge.

The request lists the endpoint's models (``GET /v1/models`` on Anthropic's Messages API, ``GET {base}/models`` on
OpenAI's and OpenAI-compatible servers): it runs no model, so nothing is billed, and it fails the same way a model call
would for a key that is refused (401/403), an endpoint that is not there (404, with the ``/v1`` hint) or a network
that does not reach it (the config file's ``[network]`` route applies, as for every provider call). It goes through
the adapters' hardened HTTP client (:class:`~codeflux.providers.transport.ProviderHttp`): bounded, no redirects,
the key added to the redactor before anything is sent. Whether to send it at all — the endpoint's approval, the
person's go-ahead — is the CLI's to ask first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from codeflux.credentials.secret import Secret
from codeflux.domain.providers import ProviderName
from codeflux.providers.anthropic import ANTHROPIC_VERSION
from codeflux.providers.endpoints import normalize_base_url
from codeflux.providers.transport import HttpPolicy, ProviderHttp, ProviderResponse
from codeflux.redact import Redactor

__all__ = ["ProbeResult", "models_url", "probe_endpoint"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    """What the endpoint answered: the URL asked, the provider's request id (if it sent one) and how many models
    it listed (None when the reply did not hold a list)."""

    url: str
    request_id: str | None
    models: int | None


def models_url(provider: ProviderName, base_url: str) -> str:
    """The models list of ``provider`` at ``base_url`` (normalized as the adapters normalize it)."""
    base = normalize_base_url(provider, base_url).rstrip("/")
    return f"{base}/v1/models" if provider is ProviderName.ANTHROPIC else f"{base}/models"


def _headers(provider: ProviderName, key: Secret | None) -> dict[str, str]:
    headers = {"accept": "application/json"}
    if key is not None and provider is ProviderName.ANTHROPIC:
        headers.update({"x-api-key": key.reveal(), "anthropic-version": ANTHROPIC_VERSION})
    elif key is not None:
        headers["authorization"] = f"Bearer {key.reveal()}"
    return headers


def probe_endpoint(provider: ProviderName, *, base_url: str, key: Secret | None, policy: HttpPolicy,
                   display_name: str) -> ProbeResult:
    """One GET of the models list (see the module docstring); the provider's errors as the adapters raise them."""
    redactor = Redactor()
    if key is not None:
        redactor.add_secret(key.reveal())
    url = models_url(provider, base_url)

    def read(response: ProviderResponse) -> ProbeResult:
        request_id = response.request_id("request-id" if provider is ProviderName.ANTHROPIC else "x-request-id")
        try:
            listed = json.loads(response.read_body()).get("data")
        except (ValueError, AttributeError):
            listed = None
        return ProbeResult(url=url, request_id=request_id, models=len(listed) if isinstance(listed, list) else None)

    http = ProviderHttp(provider=display_name, redactor=redactor, policy=policy)
    try:
        return http.get(url, headers=_headers(provider, key), read=read)
    finally:
        http.close()
