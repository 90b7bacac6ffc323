"""Provider names are a closed set, and a key's reference names the keyring entry, never the key."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import UsageError
from codeflux.domain.providers import CREDENTIAL_SERVICE, CredentialReference, ProviderName


def test_the_providers_are_anthropic_openai_and_openai_compatible() -> None:
    assert [p.value for p in ProviderName] == ["anthropic", "openai", "openai-compatible"]


@pytest.mark.parametrize("name", ["anthropic", "openai", "openai-compatible"])
def test_a_known_name_parses_to_its_provider(name: str) -> None:
    assert ProviderName.parse(name).value == name


def test_an_unknown_name_is_a_usage_error_that_lists_the_valid_names() -> None:
    with pytest.raises(UsageError, match="anthropic, openai, openai-compatible") as raised:
        ProviderName.parse("antropic")
    assert "'antropic'" in str(raised.value)


def test_a_key_pasted_where_the_name_belongs_is_not_echoed_back() -> None:
    pasted = "sk-ant-api03-" + "x" * 40
    with pytest.raises(UsageError) as raised:
        ProviderName.parse(pasted)
    assert pasted not in str(raised.value)
    assert "x" * 20 not in str(raised.value)


def test_a_reference_names_the_service_and_the_provider_account() -> None:
    reference = CredentialReference.for_provider(ProviderName.OPENAI_COMPATIBLE)
    assert str(reference) == "os://codeflux-provider/openai-compatible"
    assert (reference.service, reference.account) == (CREDENTIAL_SERVICE, "openai-compatible")


def test_a_reference_parses_back_from_its_text() -> None:
    reference = CredentialReference.for_provider(ProviderName.ANTHROPIC)
    assert CredentialReference.parse(str(reference)) == reference


@pytest.mark.parametrize(
    "text", ["", "os://codeflux-provider/", "os://other-service/anthropic", "codeflux-provider/anthropic",
             "os://codeflux-provider/anthropic/extra"],
)  # fmt: skip
def test_a_malformed_reference_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        CredentialReference.parse(text)
