"""Provider keys in the OS credential store, and the ``Secret`` type that carries them.

Owns: where a provider's key comes from (an explicit environment variable, else the OS credential store:
:mod:`codeflux.credentials.held`, which also holds keys in memory for a run), all access to the OS credential
store (through ``keyring``: service ``codeflux-provider``,
account = provider name), the probe that tells ``doctor`` whether a usable store exists and how to get
one, and :class:`Secret`, which refuses to print, serialize or pickle its value. Keys never reach
SQLite, logs, workers or the UI: only a :class:`~codeflux.domain.providers.CredentialReference` leaves
this package, and every key it touches is registered with the redaction pipeline.

May import: the standard library, ``codeflux.domain``, ``codeflux.redact`` and ``keyring``.
"""

from codeflux.credentials.held import EnvironmentKey, HeldKeys, KeySource, environment_keys, key_variables
from codeflux.credentials.keystore import (
    MAX_KEY_LENGTH,
    CredentialStoreState,
    CredentialStoreStatus,
    delete_provider_key,
    has_provider_key,
    key_generation,
    load_provider_key,
    probe_credential_store,
    store_provider_key,
)
from codeflux.credentials.listing import StoredProviderKeys, stored_provider_keys
from codeflux.credentials.secret import REDACTED, Secret

__all__ = [
    "MAX_KEY_LENGTH",
    "REDACTED",
    "CredentialStoreState",
    "CredentialStoreStatus",
    "EnvironmentKey",
    "HeldKeys",
    "KeySource",
    "Secret",
    "StoredProviderKeys",
    "delete_provider_key",
    "environment_keys",
    "has_provider_key",
    "key_generation",
    "key_variables",
    "load_provider_key",
    "probe_credential_store",
    "store_provider_key",
    "stored_provider_keys",
]
