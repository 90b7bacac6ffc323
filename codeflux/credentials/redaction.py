"""Redacting text a person hands codeflux to keep (a reported traceback): every stored provider key first.

The default redactor knows the keys this process has loaded and the known key patterns. A key that was stored but
never loaded here (a coordinator that has not called that provider yet) is known to neither, so before text is
kept :func:`redact_for_storage` loads the stored key of each named provider into the redactor: a pasted key is then
redacted although it matches no pattern. It reads the store every time (no cache): a key rotated by another process
since the last report is the one stored now. A credential store that cannot be reached leaves the patterns and the
keys already loaded; that gap is named in docs/security.md.
"""

from __future__ import annotations

from collections.abc import Iterable

from codeflux.credentials.keystore import load_provider_key
from codeflux.domain.errors import CredentialNotFoundError, CredentialStoreUnavailableError, InvalidValueError
from codeflux.domain.providers import ProviderName
from codeflux.redact import default_redactor

__all__ = ["redact_for_storage"]


def _load_stored_keys(providers: Iterable[str]) -> None:
    for provider in providers:
        try:
            load_provider_key(ProviderName.parse(provider))  # registers the key with the default redactor
        except (CredentialNotFoundError, CredentialStoreUnavailableError, InvalidValueError):
            continue


def redact_for_storage(text: str, *, providers: Iterable[str]) -> str:
    """``text`` with every secret the pipeline knows replaced, after loading the stored key of ``providers``."""
    _load_stored_keys(providers)
    return default_redactor().redact(text)
