"""Where each provider's key comes from, and the keys a process holds for its whole run.

Sources, first match wins (docs/security.md, "provider keys"):

1. ``CODEFLUX_<PROVIDER>_API_KEY`` — the provider name upper-cased, ``-`` as ``_``
   (``CODEFLUX_ANTHROPIC_API_KEY``, ``CODEFLUX_OPENAI_API_KEY``, ``CODEFLUX_OPENAI_COMPATIBLE_API_KEY``);
2. the variable the provider's own tools read: ``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY`` (none for
   ``openai-compatible``: a key for OpenAI is never sent to another server);
3. the OS credential store (:mod:`codeflux.credentials.keystore`).

So a key in the environment wins over a stored one. An environment key is never stored, logged or passed on:
a ``codeflux`` process re-executes itself without it and is handed it through a pipe
(:mod:`codeflux.worker.hardening`); the coordinator's :func:`codeflux.coordinator.spending.keys.process_keys`
takes those values once into a :class:`HeldKeys` (as :class:`Secret` values registered with the redactor).

:class:`HeldKeys` gives the key a model call sends: an environment key as it is, a stored key read from the
OS credential store once and held in memory for the run. A stored key is read again only when it may have
changed: this process stored or deleted it (:func:`~codeflux.credentials.keystore.key_generation`), or the
caller's ``stamp`` (the coordinator passes the key reference row SQLite keeps, which ``codeflux provider
set|delete`` in another process rewrites) differs from the one it was read under. A deleted key is dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from codeflux.credentials.keystore import MAX_KEY_LENGTH, key_generation, load_provider_key
from codeflux.credentials.secret import Secret
from codeflux.domain.providers import ProviderName
from codeflux.redact import Redactor, default_redactor

__all__ = [
    "EnvironmentKey",
    "HeldKeys",
    "KeySource",
    "environment_keys",
    "key_variables",
]

_TOOLS_VARIABLES: Final[Mapping[ProviderName, str]] = {
    ProviderName.ANTHROPIC: "ANTHROPIC_API_KEY",
    ProviderName.OPENAI: "OPENAI_API_KEY",
}


class KeySource(StrEnum):
    """Where a provider's key comes from."""

    ENVIRONMENT = "environment"
    CREDENTIAL_STORE = "os-credential-store"
    NONE = "none"


def key_variables(provider: ProviderName) -> tuple[str, ...]:
    """The environment variables that give ``provider``'s key, in precedence order."""
    own = f"CODEFLUX_{provider.value.upper().replace('-', '_')}_API_KEY"
    tools = _TOOLS_VARIABLES.get(provider)
    return (own,) if tools is None else (own, tools)


@dataclass(frozen=True, slots=True)
class EnvironmentKey:
    """A provider key given in the environment: the variable's name (shown) and the key (never shown)."""

    variable: str
    key: Secret

    def describe(self) -> str:
        return f"environment ({self.variable})"


def _usable(value: str) -> str | None:
    """The key in a variable's value (surrounding blanks, such as the newline of ``$(cat keyfile)``, removed), or
    None when the value cannot be a key (empty, too long, spaces or control characters inside)."""
    value = value.strip()
    if not value or len(value) > MAX_KEY_LENGTH or any(ch.isspace() or not ch.isprintable() for ch in value):
        return None
    return value


def environment_keys(environment: Mapping[str, str], *,
                     redactor: Redactor | None = None) -> tuple[dict[ProviderName, EnvironmentKey], tuple[str, ...]]:
    """Each provider's environment key found in ``environment`` (registered with ``redactor``), and the names of
    the variables set to something that is not a key (ignored, never shown)."""
    redactor = redactor or default_redactor()
    found: dict[ProviderName, EnvironmentKey] = {}
    ignored: list[str] = []
    for provider in ProviderName:
        for variable in key_variables(provider):
            raw = environment.get(variable)
            if raw is None:
                continue
            redactor.add_secret(raw)
            value = _usable(raw)
            if value is None:
                ignored.append(variable)
                continue
            redactor.add_secret(value)
            found.setdefault(provider, EnvironmentKey(variable=variable, key=Secret(value)))
    return found, tuple(ignored)


Stamp = Callable[[ProviderName], object]
"""What a stored key was read under (e.g. its reference row); a different stamp means read it again."""


@dataclass(frozen=True, slots=True)
class _Read:
    key: Secret
    generation: int
    stamp: object


class HeldKeys:
    """Provider keys for one run: the environment's, and the stored ones once read (see the module docstring).

    ``loader`` reads the OS credential store (:func:`load_provider_key`); it raises
    :class:`~codeflux.domain.errors.CredentialNotFoundError` when no key is stored.
    """

    def __init__(self, environment: Mapping[ProviderName, EnvironmentKey], *, ignored: tuple[str, ...] = (),
                 loader: Callable[[ProviderName], Secret] = load_provider_key) -> None:
        self._environment = dict(environment)
        self._ignored = ignored
        self._loader = loader
        self._read: dict[ProviderName, _Read] = {}
        self._lock = threading.Lock()

    def environment_key(self, provider: ProviderName) -> EnvironmentKey | None:
        """The key ``provider`` gets from the environment, if any."""
        return self._environment.get(provider)

    @property
    def ignored_variables(self) -> tuple[str, ...]:
        """Variables set to something that cannot be a key (so not used)."""
        return self._ignored

    def key(self, provider: ProviderName, *, stamp: Stamp | None = None) -> Secret:
        """The key a call to ``provider`` sends: the environment's, else the stored one (read from the OS
        credential store only the first time, or when it may have changed)."""
        given = self._environment.get(provider)
        if given is not None:
            return given.key
        current = (key_generation(provider), None if stamp is None else stamp(provider))
        with self._lock:
            held = self._read.get(provider)
            if held is not None and (held.generation, held.stamp) == current:
                return held.key
            self._read.pop(provider, None)
        key = self._loader(provider)  # outside the lock: the store can take seconds to answer
        with self._lock:
            if (key_generation(provider), current[1]) == current:
                self._read[provider] = _Read(key=key, generation=current[0], stamp=current[1])
        return key

    def forget(self, provider: ProviderName | None = None) -> None:
        """Drop the stored key(s) held, so the next call reads the store again."""
        with self._lock:
            if provider is None:
                self._read.clear()
            else:
                self._read.pop(provider, None)
