"""The config file's settings: what it accepts, and a clear refusal naming the key for everything else."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.user_config import ConfiguredNetwork, ConfiguredProvider, UserConfig, parse_user_config


def test_a_provider_table_is_read_and_an_empty_file_sets_nothing() -> None:
    assert parse_user_config("") == UserConfig()
    text = '[provider]\nname = "anthropic"\ncheap_model = "claude-haiku-4-5"\n'
    assert parse_user_config(text).provider == ConfiguredProvider(name="anthropic", cheap_model="claude-haiku-4-5")
    compatible = parse_user_config('[provider]\nname = "openai-compatible"\ncheap_model = "m"\n'
                                   'base_url = "http://127.0.0.1:4000/v1"\n').provider
    assert compatible is not None and compatible.base_url == "http://127.0.0.1:4000/v1"


@pytest.mark.parametrize(("text", "named"), [
    ('[provder]\nname = "anthropic"\n', "setting provder"),  # a typo in a table's name
    ('[provider]\nnme = "anthropic"\n', "[provider] nme"),  # … or a key's
    ('[provider]\nname = "gpt"\n', "[provider] name"),
    ('[provider]\nname = "anthropic"\n', "[provider] cheap_model"),  # a real provider needs its model
    ('[provider]\nname = "anthropic"\ncheap_model = 3\n', "[provider] cheap_model"),
    ('[provider]\nname = "scripted"\ncheap_model = "x"\n', "[provider]"),
    ('[provider]\nname = "openai"\ncheap_model = "m"\nbase_url = "http://x"\n', "[provider] base_url"),
    ('[provider]\nname = "anthropic"\ncheap_model = "m"\napi_key = "sk-ant-x"\n', "[provider] api_key"),
    ('provider = "anthropic"\n', "[provider]"),
    ("[provider\n", "syntax"),
    ('[network]\nproxy = "socks5://proxy:1080"\n', "[network] proxy"),
    ('[network]\nproxy = "http://user:hunter2@proxy:3128"\n', "[network] proxy"),  # a password is never repeated
    ('[network]\nproxy = "http://proxy:3128/path"\n', "[network] proxy"),
    ('[network]\nproxy = "http://proxy:99999"\n', "[network] proxy"),
    ('[network]\nproxy = "environmnet"\n', "[network] proxy"),
    ('[network]\nca_bundle = "certs/ca.pem"\n', "[network] ca_bundle"),
    ('[network]\nverify = false\n', "[network] verify"),
    ('network = "direct"\n', "[network]"),
])
def test_anything_else_is_refused_naming_the_key(text: str, named: str) -> None:
    with pytest.raises(InvalidValueError) as refused:
        parse_user_config(text)
    assert named in str(refused.value)
    assert "sk-ant-x" not in str(refused.value)  # a key put there by mistake is never repeated
    assert "hunter2" not in str(refused.value)


def test_a_network_table_names_a_proxy_and_a_ca_bundle() -> None:
    text = '[network]\nproxy = "environment"\nca_bundle = "/etc/ssl/corp-ca.pem"\n'
    assert parse_user_config(text) == UserConfig(
        network=ConfiguredNetwork(proxy="environment", ca_bundle="/etc/ssl/corp-ca.pem"))
    assert parse_user_config('[network]\nproxy = "HTTP://Proxy.corp:3128/"\n').network == ConfiguredNetwork(
        proxy="http://proxy.corp:3128")
    assert parse_user_config("[network]\n").network == ConfiguredNetwork()
