"""Model providers by name, and where their keys live in the OS credential store.

A provider name is a closed set: a name outside it is a usage error, never a new keyring entry. A key
is never held here; only its *reference* (``os://codeflux-provider/<name>``) is, which is what SQLite
keeps. The key itself stays in the OS credential store (see ``codeflux.credentials``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from codeflux.domain.errors import UsageError

__all__ = [
    "CREDENTIAL_SERVICE",
    "ChoiceSource",
    "CredentialReference",
    "ProviderName",
]

CREDENTIAL_SERVICE = "codeflux-provider"
"""The keyring service under which every provider key is stored; the account is the provider name."""

_REFERENCE_SCHEME = "os://"


class ProviderName(StrEnum):
    """The providers codeflux can hold a key for."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    OPENAI_COMPATIBLE = "openai-compatible"

    @classmethod
    def parse(cls, text: str) -> ProviderName:
        """The provider called ``text``, or a :class:`UsageError` listing the valid names."""
        try:
            return cls(text)
        except ValueError:
            valid = ", ".join(member.value for member in cls)
            raise UsageError(f"unknown provider {_echo_name(text)}; choose one of: {valid}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialReference:
    """Where a provider's key lives: service ``codeflux-provider``, account = the provider name.

    Its string form ``os://codeflux-provider/<name>`` is what the store persists; it names the entry
    and says nothing about the key.
    """

    provider: ProviderName

    @property
    def service(self) -> str:
        return CREDENTIAL_SERVICE

    @property
    def account(self) -> str:
        return self.provider.value

    @property
    def uri(self) -> str:
        return f"{_REFERENCE_SCHEME}{CREDENTIAL_SERVICE}/{self.provider.value}"

    def __str__(self) -> str:
        return self.uri

    @classmethod
    def for_provider(cls, provider: ProviderName) -> CredentialReference:
        return cls(provider=provider)

    @classmethod
    def parse(cls, text: str) -> CredentialReference:
        """The reference spelled ``text`` (``os://codeflux-provider/<name>``), or a :class:`UsageError`."""
        prefix = f"{_REFERENCE_SCHEME}{CREDENTIAL_SERVICE}/"
        if not text.startswith(prefix):
            raise UsageError(f"not a codeflux credential reference; expected {prefix}<provider>")
        return cls(provider=ProviderName.parse(text[len(prefix) :]))


def _echo_name(text: str) -> str:
    # A mistyped name is echoed to help the user, but only when it looks like a name: someone who
    # pastes a key where the name belongs must not see it printed back into a terminal or a log.
    if 0 < len(text) <= 32 and all(ch.isascii() and (ch.isalnum() or ch in "-_") for ch in text):
        return repr(text)
    return "(not shown: it does not look like a provider name)"


class ChoiceSource(StrEnum):
    """Why the coordinator uses the provider it uses (highest rank first); a task's pin records it."""

    FLAG = "flag"  # `codeflux start --provider …`
    ENVIRONMENT = "environment"  # CODEFLUX_PROVIDER in `start`'s environment (ranks with the flag it stands for)
    DEMO = "demo"  # `start --demo` or the first-run demo button: the scripted provider
    SETTINGS = "settings"  # the choice stored in Settings → Providers
    CONFIG = "config"  # the config file's [provider] (codeflux.domain.user_config), read when `start` began
    DEFAULT = "default"  # nothing chosen: the scripted provider (not an AI model)
