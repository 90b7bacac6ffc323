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
    # anthropic or openai through a proxy speaking their API (the file refused it while their adapters ignored it)
    proxied = parse_user_config('[provider]\nname = "anthropic"\ncheap_model = "m"\n'
                                'base_url = "https://gateway.example.com"\n').provider
    assert proxied is not None and proxied.base_url == "https://gateway.example.com"


@pytest.mark.parametrize(("text", "named"), [
    ('[provder]\nname = "anthropic"\n', "setting provder"),  # a typo in a table's name
    ('[provider]\nnme = "anthropic"\n', "[provider] nme"),  # … or a key's
    ('[provider]\nname = "gpt"\n', "[provider] name"),
    ('[provider]\nname = "anthropic"\n', "[provider] cheap_model"),  # a real provider needs its model
    ('[provider]\nname = "anthropic"\ncheap_model = 3\n', "[provider] cheap_model"),
    ('[provider]\nname = "scripted"\ncheap_model = "x"\n', "[provider]"),
    ('[provider]\nname = "openai"\ncheap_model = "m"\nbase_url = 3\n', "[provider] base_url"),
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


# ─── issue 21 item 4, the rest: budget default, ladder, pipeline thresholds, per-model output bound ───────────


def test_the_budget_default_ladder_thresholds_and_model_bounds_are_read() -> None:
    from codeflux.domain.ladder import Ladder
    from codeflux.domain.money import USD, Money
    from codeflux.domain.user_config import ConfiguredLadder, ConfiguredModel

    config = parse_user_config(
        '[budget]\ndefault_hard_limit = "2.50 USD"\n'
        '[ladder]\nrungs = ["cheap:low", "capable:high", "capable:max"]\nstall_threshold = 2\n'
        '[pipeline]\n"path-coverage.min-percent" = 85\n'
        '[models."claude-haiku-4-5"]\nmax_output_tokens = 4096\n')

    assert config.budget_default == Money(minor=250, currency=USD)
    # capable:max is on the ladder only because the user put it there (it still asks before spending)
    assert config.ladder == ConfiguredLadder(ladder=Ladder.parse(["cheap:low", "capable:high", "capable:max"]),
                                             stall_threshold=2)
    assert dict(config.pipeline) == {"path-coverage.min-percent": 85}
    assert dict(config.models) == {"claude-haiku-4-5": ConfiguredModel(max_output_tokens=4096)}
    unset = parse_user_config("")
    assert (unset.budget_default, unset.ladder, dict(unset.pipeline), dict(unset.models)) == (
        None, ConfiguredLadder(), {}, {})


@pytest.mark.parametrize(("text", "named"), [
    ("[budget]\ndefault_hard_limit = 2.5\n", "[budget] default_hard_limit"),  # a float: never money
    ('[budget]\ndefault_hard_limit = "2.5"\n', "[budget] default_hard_limit"),  # no currency
    ('[budget]\ndefault_hard_limit = "2.505 USD"\n', "[budget] default_hard_limit"),  # finer than a cent
    ('[budget]\ndefault_hard_limit = "0 USD"\n', "[budget] default_hard_limit"),
    ('[budget]\ndefault_hard_limit = "2.50 EUR"\n', "[budget] default_hard_limit"),  # prices are in USD
    ('[budget]\ndefault = "2.50 USD"\n', "[budget] default"),
    ('[ladder]\nrungs = ["cheap:low", "cheap:hihg"]\n', "[ladder] rungs"),
    ('[ladder]\nrungs = ["capable:high", "cheap:low"]\n', "[ladder] rungs"),  # cheapest first
    ('[ladder]\nrungs = []\n', "[ladder] rungs"),
    ('[ladder]\nrungs = "cheap:low"\n', "[ladder] rungs"),
    ("[ladder]\nstall_threshold = 0\n", "[ladder] stall_threshold"),
    ("[ladder]\nstall_threshold = true\n", "[ladder] stall_threshold"),
    ("[ladder]\nstall = 3\n", "[ladder] stall"),
    ('[pipeline]\n"path-coverage.min-percent" = "85"\n', "[pipeline] path-coverage.min-percent"),
    ('[pipeline]\n"path-coverage.min-percent" = 85.5\n', "[pipeline] path-coverage.min-percent"),
    ('[models."m"]\nmax_output_tokens = 0\n', '[models."m"] max_output_tokens'),
    ('[models."m"]\nmax_output_tokens = "4096"\n', '[models."m"] max_output_tokens'),
    ('[models."m"]\nmax_tokens = 4096\n', '[models."m"] max_tokens'),
    ('[models]\nm = 4096\n', 'models."m"'),
])
def test_the_new_tables_refuse_anything_else_naming_the_key(text: str, named: str) -> None:
    with pytest.raises(InvalidValueError) as refused:
        parse_user_config(text)
    assert named in str(refused.value)
