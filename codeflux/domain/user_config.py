"""The user's config file (``$XDG_CONFIG_HOME/codeflux/config.toml``): defaults for what flags otherwise say.

Precedence, highest first: a command-line flag, the choice stored in Settings → Providers (the browser), this file,
the built-in default (the scripted provider, not an AI model). The file is read, never written, by codeflux; it holds
no secrets (a key in it is refused: keys live in the OS credential store or the environment).

    [provider]
    name = "anthropic"                 # scripted | anthropic | openai | openai-compatible
    cheap_model = "claude-haiku-4-5"   # the ladder's cheap model (needed for a real provider)
    capable_model = "claude-sonnet-4-5"  # optional; default: the cheap one
    base_url = "http://127.0.0.1:4000/v1"  # openai-compatible only (a non-default URL is still approved per run)

Anything else — an unknown table or key, a value of the wrong type — is refused with the key's name, so a typo never
silently falls back to a default. Parsing is pure (:mod:`tomllib`); reading the file is the CLI's.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Final

from codeflux.domain.errors import InvalidValueError

__all__ = ["CONFIG_PROVIDERS", "ConfiguredProvider", "UserConfig", "parse_user_config"]

CONFIG_PROVIDERS: Final = ("scripted", "anthropic", "openai", "openai-compatible")
_PROVIDER_KEYS: Final = frozenset({"name", "cheap_model", "capable_model", "base_url"})
_SECRET_LOOKING: Final = ("key", "token", "secret", "password")
_MAX_TEXT: Final = 512


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfiguredProvider:
    """The ``[provider]`` table: which provider, and for a real one the ladder's models."""

    name: str
    cheap_model: str = ""
    capable_model: str = ""
    base_url: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class UserConfig:
    """What the config file sets (``provider`` None: it names none)."""

    provider: ConfiguredProvider | None = None


def _refuse(where: str, reason: str) -> InvalidValueError:
    return InvalidValueError(kind=f"setting {where}", reason=reason)


def _text(table: dict[str, object], key: str) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise _refuse(f"[provider] {key}", "must be a string in quotes")
    if len(value) > _MAX_TEXT or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise _refuse(f"[provider] {key}", f"must be one line of at most {_MAX_TEXT} characters")
    return value.strip()


def _provider(table: object) -> ConfiguredProvider:
    if not isinstance(table, dict):
        raise _refuse("[provider]", "must be a table ([provider] on its own line, then key = value lines)")
    for key in table:
        if any(word in key.lower() for word in _SECRET_LOOKING):
            raise _refuse(f"[provider] {key}", "keys do not belong in the config file: use `codeflux provider set` or "
                          "the provider's environment variable (never stored)")
        if key not in _PROVIDER_KEYS:
            known = ", ".join(sorted(_PROVIDER_KEYS))
            raise _refuse(f"[provider] {key}", f"not a setting codeflux knows (known: {known})")
    name = _text(table, "name")
    if name not in CONFIG_PROVIDERS:
        raise _refuse("[provider] name", f"must be one of {', '.join(CONFIG_PROVIDERS)}")
    provider = ConfiguredProvider(name=name, cheap_model=_text(table, "cheap_model"),
                                  capable_model=_text(table, "capable_model"), base_url=_text(table, "base_url"))
    if name == "scripted" and (provider.cheap_model or provider.capable_model or provider.base_url):
        raise _refuse("[provider]", "the scripted provider (not an AI model) takes no model and no base_url")
    if name != "scripted" and not provider.cheap_model:
        raise _refuse("[provider] cheap_model", f"{name} needs the ladder's cheap model")
    if provider.base_url and name != "openai-compatible":
        raise _refuse("[provider] base_url", "only an openai-compatible server takes a base_url")
    return provider


def parse_user_config(text: str) -> UserConfig:
    """The config file's settings, or :class:`InvalidValueError` naming the key (or TOML's own line and column)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _refuse("syntax", str(error)) from None
    for key in document:
        if key != "provider":
            raise _refuse(key, "not a setting codeflux knows (known tables: [provider])")
    return UserConfig(provider=_provider(document["provider"]) if "provider" in document else None)
