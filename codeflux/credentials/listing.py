"""Which providers have a key stored — never a key — or why that cannot be told.

One answer for every place that shows it (``codeflux provider list``, ``doctor``, the UI's provider
status): the store is probed (or a probe the caller already made is reused), then each provider's entry is
looked up, each call bounded by ``timeout_s``. When the store is unusable, or stops answering part way,
the answer is *unknown* with the reason — never "no key".
"""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.credentials.keystore import CredentialStoreStatus, has_provider_key, probe_credential_store
from codeflux.domain.errors import CredentialStoreUnavailableError
from codeflux.domain.providers import ProviderName

__all__ = ["StoredProviderKeys", "stored_provider_keys"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredProviderKeys:
    """The providers with a stored key, or (``stored`` empty) why that is unknown."""

    stored: frozenset[ProviderName]
    unknown_because: str | None = None

    @property
    def known(self) -> bool:
        return self.unknown_because is None


def stored_provider_keys(
    *, timeout_s: float = 5.0, status: CredentialStoreStatus | None = None
) -> StoredProviderKeys:
    """Look up every provider's entry; ``status`` is a probe the caller already made (else one is made)."""
    status = status or probe_credential_store(timeout_s=timeout_s)
    if not status.usable:
        return StoredProviderKeys(stored=frozenset(),
                                  unknown_because=f"the OS credential store is not usable ({status.reason}); "
                                                  f"{status.fix}")
    stored = set()
    for provider in ProviderName:
        try:
            if has_provider_key(provider, timeout_s=timeout_s):
                stored.add(provider)
        except CredentialStoreUnavailableError:
            return StoredProviderKeys(stored=frozenset(), unknown_because="the OS credential store stopped answering")
    return StoredProviderKeys(stored=frozenset(stored))
