"""Redacting text a person hands codeflux to keep (a reported traceback): every stored provider key first.

The default redactor knows the keys this process has loaded and the known key patterns. A key that was stored but
never loaded here (a coordinator that has not called that provider yet) is known to neither, so before text is
kept :func:`redact_for_storage` loads the stored key of each named provider into the redactor (once per process
and provider): a pasted key is then redacted although it matches no pattern. A credential store that cannot be
reached leaves the patterns and the keys already loaded; that gap is named in docs/security.md.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Final

from codeflux.credentials.keystore import load_provider_key
from codeflux.domain.errors import CredentialNotFoundError, CredentialStoreUnavailableError, InvalidValueError
from codeflux.domain.providers import ProviderName
from codeflux.redact import default_redactor

__all__ = ["redact_for_storage"]

_LOCK: Final = threading.Lock()
_LOADED: set[str] = set()  # providers whose stored key this process already gave the default redactor


def _load_stored_keys(providers: Iterable[str]) -> None:
    for provider in providers:
        with _LOCK:
            if provider in _LOADED:
                continue
        try:
            load_provider_key(ProviderName.parse(provider))  # registers the key with the default redactor
        except (CredentialNotFoundError, CredentialStoreUnavailableError, InvalidValueError):
            continue
        with _LOCK:
            _LOADED.add(provider)


def redact_for_storage(text: str, *, providers: Iterable[str]) -> str:
    """``text`` with every secret the pipeline knows replaced, after loading the stored key of ``providers``."""
    _load_stored_keys(providers)
    return default_redactor().redact(text)
