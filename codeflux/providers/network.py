"""The route of provider calls the config file's ``[network]`` table asks for (issue 21 item 5).

:func:`network_policy` turns :class:`~codeflux.domain.user_config.ConfiguredNetwork` into the proxy and CA bundle
of an adapter's :class:`~codeflux.providers.transport.HttpPolicy`, for one endpoint:

- no ``[network]`` table, or no ``proxy``: no proxy — the environment's proxy variables are ignored (a prompt and a
  key go only where the user approved them to go);
- ``proxy = "environment"``: the proxy the environment names for the endpoint's scheme (``HTTPS_PROXY`` /
  ``https_proxy`` for an https endpoint, ``HTTP_PROXY`` / ``http_proxy`` for a loopback http one), unless
  ``NO_PROXY`` / ``no_proxy`` exempts the endpoint's host (``*``, a host and its subdomains, ``host:port``; as
  curl reads it, without CIDR ranges);
- ``proxy = "http://host:port"``: that proxy for every provider call.

The endpoint approval is untouched: it names the endpoint (the final host), checked before anything is sent,
whichever way the request then travels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from urllib.parse import urlsplit

from codeflux.domain.user_config import PROXY_FROM_ENVIRONMENT, ConfiguredNetwork
from codeflux.providers.transport import HttpPolicy

__all__ = ["network_policy", "proxy_for"]


def proxy_for(network: ConfiguredNetwork | None, *, endpoint: str, environ: Mapping[str, str]) -> str | None:
    """The proxy URL a call to ``endpoint`` goes through, or None (see the module docstring)."""
    if network is None or not network.proxy:
        return None
    if network.proxy != PROXY_FROM_ENVIRONMENT:
        return network.proxy
    parts = urlsplit(endpoint)
    # Lower-case names win over upper-case ones, as urllib reads them; only this mapping is read, never os.environ.
    proxies: dict[str, str] = {}
    for name, value in sorted(environ.items(), key=lambda item: item[0].islower()):
        if name.lower().endswith("_proxy") and value:
            proxies[name.lower()[: -len("_proxy")]] = value
    bypass = proxies.pop("no", "")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if bypass and _bypassed(parts.hostname or "", port, bypass):
        return None
    return proxies.get(parts.scheme) or None


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    """``NO_PROXY``'s verdict for ``host``: ``*`` exempts every host; an entry exempts that host and its
    subdomains (a leading dot is the same), and only that port when it names one (``host:port``)."""
    host = host.lower().rstrip(".")
    for entry in (item.strip().lower() for item in no_proxy.split(",")):
        if entry == "*":
            return True
        name, _, wanted = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        name = name.lstrip(".").rstrip(".")
        if not name or (wanted and wanted != str(port)):
            continue
        if host == name or host.endswith("." + name):
            return True
    return False


def network_policy(policy: HttpPolicy | None, network: ConfiguredNetwork | None, *, endpoint: str,
                   environ: Mapping[str, str]) -> HttpPolicy:
    """``policy`` (the defaults when None) with the proxy and CA bundle ``network`` asks for calls to
    ``endpoint``."""
    base = policy or HttpPolicy()
    bundle = network.ca_bundle if network is not None and network.ca_bundle else None
    return replace(base, proxy_url=proxy_for(network, endpoint=endpoint, environ=environ), ca_bundle=bundle)
