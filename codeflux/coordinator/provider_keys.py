"""The provider keys this coordinator process holds for its run, and where each comes from.

:func:`process_keys` is built once per process: from the keys the process was handed at its re-execution
(:func:`codeflux.worker.hardening.take_handed_off_keys`) and, in a process that was not re-executed (a test
calling in, ``python -m codeflux.cli.main``), from ``os.environ`` — whose key variables are then removed, so
no program started later (git, the browser) inherits them. Precedence and the rest: :mod:`codeflux.credentials.held`.

:func:`key_loader` is what the gateway's adapters fetch their key through: the key is read from the OS
credential store once per provider for the run and held as a :class:`~codeflux.credentials.Secret`; it is read
again when the key reference row SQLite keeps changes (``codeflux provider set|delete`` in another process,
Settings → Providers) or this process stored or deleted it, and a deleted key is dropped.

:func:`key_origins` says, per provider, where its key comes from — ``environment (ANTHROPIC_API_KEY)``,
``OS credential store``, ``none`` or ``unknown: …`` — never the key; ``doctor`` and the settings view show it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass

from codeflux.credentials import HeldKeys, KeySource, Secret, StoredProviderKeys, environment_keys
from codeflux.domain.providers import ProviderName
from codeflux.store.database import Database
from codeflux.store.provider_credentials import list_provider_credential_references
from codeflux.worker.hardening import is_provider_key_variable, take_handed_off_keys

__all__ = ["KeyOrigin", "key_loader", "key_origins", "process_keys"]

_process_keys: HeldKeys | None = None
_process_lock = threading.Lock()


def process_keys(environ: MutableMapping[str, str] | None = None) -> HeldKeys:
    """This process's :class:`HeldKeys` (see the module docstring); ``environ`` defaults to ``os.environ``."""
    global _process_keys  # noqa: PLW0603 (one set of held keys per process, like the redactor)
    with _process_lock:
        if _process_keys is None:
            source = os.environ if environ is None else environ
            given = {name: value for name, value in source.items() if is_provider_key_variable(name)}
            for name in given:
                source.pop(name, None)
            found, ignored = environment_keys({**given, **take_handed_off_keys()})
            _process_keys = HeldKeys(found, ignored=ignored)
        return _process_keys


def key_loader(db: Database | None, *, keys: HeldKeys | None = None) -> Callable[[ProviderName], Secret]:
    """The key loader of a run's adapters: ``keys`` (default :func:`process_keys`), with a stored key held until
    its reference row in ``db`` changes."""
    held = keys or process_keys()

    def stamp(provider: ProviderName) -> object:
        if db is None:
            return None
        return next(((row.credential_ref, row.revision, row.updated_at_us)
                     for row in list_provider_credential_references(db) if row.provider == provider.value), None)

    def load(provider: ProviderName) -> Secret:
        return held.key(provider, stamp=stamp)

    return load


@dataclass(frozen=True, slots=True)
class KeyOrigin:
    """Where a provider's key comes from: the source, and what a person reads (never the key)."""

    source: KeySource | None  # None: unknown (the credential store cannot tell)
    text: str


def key_origins(stored: StoredProviderKeys, *, keys: HeldKeys | None = None) -> Mapping[ProviderName, KeyOrigin]:
    """Each provider's key source: its environment variable first, else the OS credential store per ``stored``
    (what :func:`~codeflux.credentials.stored_provider_keys` found), else none."""
    held = keys or process_keys()
    origins = {}
    for provider in ProviderName:
        given = held.environment_key(provider)
        if given is not None:
            origins[provider] = KeyOrigin(KeySource.ENVIRONMENT, given.describe())
        elif not stored.known:
            origins[provider] = KeyOrigin(None, f"unknown: {stored.unknown_because}")
        elif provider in stored.stored:
            origins[provider] = KeyOrigin(KeySource.CREDENTIAL_STORE, "OS credential store")
        else:
            origins[provider] = KeyOrigin(KeySource.NONE, "none")
    return origins
