"""The route of provider calls from the config file's ``[network]`` table (codeflux/providers/network.py): no table
means no proxy whatever the environment says; ``environment`` reads the proxy for the endpoint's scheme and honours
NO_PROXY; an explicit proxy applies to every call."""

from __future__ import annotations

import pytest

from codeflux.domain.user_config import ConfiguredNetwork
from codeflux.providers.network import network_policy, proxy_for
from codeflux.providers.transport import HttpPolicy

ANTHROPIC, LOCAL = "https://api.anthropic.com", "http://127.0.0.1:4000/v1"
ENVIRONMENT = ConfiguredNetwork(proxy="environment")
CORPORATE = {"HTTPS_PROXY": "http://proxy.corp:3128", "HTTP_PROXY": "http://plain.corp:3128",
             "NO_PROXY": "localhost,127.0.0.1,.internal.corp"}


def test_without_a_network_table_the_environments_proxy_is_ignored() -> None:
    assert proxy_for(None, endpoint=ANTHROPIC, environ=CORPORATE) is None
    assert proxy_for(ConfiguredNetwork(), endpoint=ANTHROPIC, environ=CORPORATE) is None


def test_environment_picks_the_proxy_for_the_endpoints_scheme_and_honours_no_proxy() -> None:
    assert proxy_for(ENVIRONMENT, endpoint=ANTHROPIC, environ=CORPORATE) == "http://proxy.corp:3128"
    assert proxy_for(ENVIRONMENT, endpoint=LOCAL, environ=CORPORATE) is None  # 127.0.0.1 is exempt
    assert proxy_for(ENVIRONMENT, endpoint="http://llm.internal.corp/v1", environ=CORPORATE) is None
    assert proxy_for(ENVIRONMENT, endpoint="http://llm.corp/v1", environ=CORPORATE) == "http://plain.corp:3128"
    assert proxy_for(ENVIRONMENT, endpoint=ANTHROPIC, environ={}) is None
    lower = {"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:1"}
    assert proxy_for(ENVIRONMENT, endpoint=ANTHROPIC, environ=lower) == "http://lower:1"  # as curl and urllib


@pytest.mark.parametrize(("no_proxy", "bypassed"), [
    ("*", True), ("api.anthropic.com", True), (".anthropic.com", True), ("anthropic.com", True),
    ("api.anthropic.com:443", True), ("api.anthropic.com:8443", False), ("thropic.com", False), ("", False),
    (" , ", False),
])
def test_no_proxy_entries(no_proxy: str, bypassed: bool) -> None:
    environ = {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": no_proxy}
    assert (proxy_for(ENVIRONMENT, endpoint=ANTHROPIC, environ=environ) is None) is bypassed


def test_an_explicit_proxy_applies_to_every_call_and_the_policy_keeps_its_limits() -> None:
    explicit = ConfiguredNetwork(proxy="http://proxy:3128", ca_bundle="/etc/ssl/corp.pem")
    limits = HttpPolicy(max_attempts=2)
    policy = network_policy(limits, explicit, endpoint=LOCAL, environ={"NO_PROXY": "*"})
    assert (policy.proxy_url, policy.ca_bundle, policy.max_attempts) == ("http://proxy:3128", "/etc/ssl/corp.pem", 2)
    assert network_policy(None, None, endpoint=ANTHROPIC, environ=CORPORATE) == HttpPolicy()
