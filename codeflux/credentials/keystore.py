"""Provider keys in the OS credential store, through ``keyring`` — and nowhere else.

Each key is one entry: service ``codeflux-provider``, account = the provider name. SQLite keeps only
the :class:`CredentialReference`. If no OS credential store is usable, every operation fails with
:class:`CredentialStoreUnavailableError` naming the fix; codeflux never falls back to a plaintext or
file backend (``keyrings.alt`` and the like), even when ``keyring`` is configured to use one.

Which backends count as an OS credential store is an allow-list (Secret Service / libsecret, KWallet,
macOS Keychain, Windows Credential Manager): a backend codeflux does not know could keep keys anywhere.

Every call into ``keyring`` runs on a daemon thread with a timeout, so a hung D-Bus cannot hang
``doctor`` or the coordinator; a call that times out is abandoned (its thread is left to finish on its
own) and reported as an unusable store. Every ``keyring`` failure, and anything a backend raises, stops
here: it is mapped to a codeflux error chained with ``from``, and its message text is never shown
(only its type), since a backend's message could carry data it was given.

Every key this module reads or writes is registered with the process-wide redactor first, so it cannot
appear in a log line, a UI message or a diagnostics export afterwards.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import keyring
import keyring.errors

from codeflux.credentials.secret import Secret
from codeflux.domain.errors import CredentialNotFoundError, CredentialStoreUnavailableError, UsageError
from codeflux.domain.providers import CREDENTIAL_SERVICE, CredentialReference, ProviderName
from codeflux.redact import default_redactor

__all__ = [
    "MAX_KEY_LENGTH",
    "CredentialStoreState",
    "CredentialStoreStatus",
    "delete_provider_key",
    "has_provider_key",
    "key_generation",
    "load_provider_key",
    "probe_credential_store",
    "store_provider_key",
]

MAX_KEY_LENGTH = 4096
"""Longest key accepted; provider keys are far shorter, so anything longer is a paste mistake."""

_PROBE_ACCOUNT = "codeflux-probe"
_DEFAULT_OPERATION_TIMEOUT_S = 10.0

_TRUSTED_BACKENDS = frozenset(
    {
        "keyring.backends.SecretService.Keyring",
        "keyring.backends.libsecret.Keyring",
        "keyring.backends.kwallet.DBusKeyring",
        "keyring.backends.kwallet.DBusKeyringKWallet4",
        "keyring.backends.macOS.Keyring",
        "keyring.backends.Windows.WinVaultKeyring",
    }
)
_NO_STORE_BACKENDS = frozenset({"keyring.backends.fail.Keyring", "keyring.backends.null.Keyring"})
_CHAINER_BACKEND = "keyring.backends.chainer.ChainerBackend"

_HEADLESS_LINUX_FIX = (
    "install gnome-keyring and dbus (Debian/Ubuntu: apt-get install gnome-keyring dbus dbus-daemon), "
    "then run codeflux inside a D-Bus session with an unlocked keyring: "
    'dbus-run-session -- sh -c \'printf %s "$KEYRING_PASSWORD" | gnome-keyring-daemon --unlock '
    "--components=secrets >/dev/null; exec codeflux start' "
    "(use the same password every time: it unlocks the keyring file where the keys are kept)"
)
_OTHER_OS_FIX = (
    "make sure the Python keyring package can reach the macOS Keychain or Windows Credential Manager "
    "(unset PYTHON_KEYRING_BACKEND and remove any backend setting from keyringrc.cfg)"
)

T = TypeVar("T")

_generations: dict[ProviderName, int] = {}
_generations_lock = threading.Lock()


def key_generation(name: ProviderName) -> int:
    """How many times this process stored or deleted provider ``name``'s key: a key held from an earlier
    generation may be stale (:class:`codeflux.credentials.held.HeldKeys` reads it again)."""
    with _generations_lock:
        return _generations.get(ProviderName.parse(name), 0)


def _changed(provider: ProviderName) -> None:
    with _generations_lock:
        _generations[provider] = _generations.get(provider, 0) + 1


class CredentialStoreState(StrEnum):
    """What the credential store probe found."""

    USABLE = "usable"
    MISSING = "missing"  # keyring found no OS credential store at all
    REFUSED = "refused"  # keyring would use a backend codeflux does not trust (plaintext, unknown)
    FAILED = "failed"  # an OS credential store exists but did not work (locked, unreachable, error)
    TIMED_OUT = "timed-out"  # the store did not answer in time (e.g. a hung D-Bus)


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialStoreStatus:
    """The outcome of :func:`probe_credential_store`; ``reason`` and ``fix`` are set unless usable."""

    backend: str
    state: CredentialStoreState
    reason: str | None = None
    fix: str | None = None

    @property
    def usable(self) -> bool:
        return self.state is CredentialStoreState.USABLE

    def describe(self) -> str:
        """One line for a user: the backend, whether it is usable, and if not, why and the fix."""
        if self.usable:
            return f"OS credential store usable ({self.backend})"
        return f"no usable OS credential store ({self.backend}): {self.reason}; fix: {self.fix}"


class _StoreUnusable(Exception):
    """Raised on the keyring thread when the resolved backend must not be used."""

    def __init__(self, status: CredentialStoreStatus) -> None:
        super().__init__(status.state.value)
        self.status = status


class _KeyringTimeout(Exception):
    """The keyring call did not finish within its timeout."""


def probe_credential_store(*, timeout_s: float = 5.0) -> CredentialStoreStatus:
    """Whether provider keys can be kept in an OS credential store here, and if not why and how to fix it.

    Resolves the ``keyring`` backend, refuses untrusted ones, and reads one (absent) entry to prove the
    store answers and is unlocked. It writes nothing. It returns within about ``timeout_s`` seconds
    even when D-Bus hangs, and never raises for a store problem: that is what the status reports.
    """
    resolved: list[str] = []

    def work() -> CredentialStoreStatus:
        _usable_backend(resolved).get_password(CREDENTIAL_SERVICE, _PROBE_ACCOUNT)
        return CredentialStoreStatus(backend=resolved[0], state=CredentialStoreState.USABLE)

    try:
        return _call_on_keyring_thread(work, timeout_s=timeout_s)
    except Exception as exc:  # every failure becomes a status; nothing escapes the probe
        return _failure_status(exc, backend=_first(resolved), timeout_s=timeout_s)


def store_provider_key(
    name: ProviderName, key: Secret, *, timeout_s: float = _DEFAULT_OPERATION_TIMEOUT_S
) -> CredentialReference:
    """Store (or replace) the key of provider ``name``; return the reference SQLite may keep.

    Raises :class:`UsageError` for an empty or malformed key and :class:`CredentialStoreUnavailableError`
    (with the fix) when no usable OS credential store exists; nothing is written anywhere else.
    """
    provider = ProviderName.parse(name)
    value = key.reveal()
    _check_key_shape(value)
    default_redactor().add_secret(value)

    def work(backend: Any) -> None:
        backend.set_password(CREDENTIAL_SERVICE, provider.value, value)

    try:
        _run_keyring_operation(work, action="store the key", timeout_s=timeout_s)
    finally:
        _changed(provider)
    return CredentialReference.for_provider(provider)


def load_provider_key(name: ProviderName, *, timeout_s: float = _DEFAULT_OPERATION_TIMEOUT_S) -> Secret:
    """The stored key of provider ``name``, registered with the redactor before it is returned.

    Raises :class:`CredentialNotFoundError` when none is stored and
    :class:`CredentialStoreUnavailableError` when the store cannot be used.
    """
    provider = ProviderName.parse(name)
    value = _read_key(provider, timeout_s=timeout_s)
    if value is None:
        raise CredentialNotFoundError(provider=provider.value)
    return Secret(value)


def has_provider_key(name: ProviderName, *, timeout_s: float = _DEFAULT_OPERATION_TIMEOUT_S) -> bool:
    """Whether a key is stored for provider ``name`` (the value is never returned).

    Raises :class:`CredentialStoreUnavailableError` when the store cannot be used: "unknown" is not "no".
    """
    return _read_key(ProviderName.parse(name), timeout_s=timeout_s) is not None


def delete_provider_key(name: ProviderName, *, timeout_s: float = _DEFAULT_OPERATION_TIMEOUT_S) -> bool:
    """Delete the key of provider ``name``; ``True`` if one was deleted, ``False`` if none was stored.

    Idempotent: deleting twice is not an error.
    """
    provider = ProviderName.parse(name)

    def work(backend: Any) -> bool:
        existing = backend.get_password(CREDENTIAL_SERVICE, provider.value)
        if existing is None:
            return False
        default_redactor().add_secret(existing)
        try:
            backend.delete_password(CREDENTIAL_SERVICE, provider.value)
        except keyring.errors.PasswordDeleteError:
            if backend.get_password(CREDENTIAL_SERVICE, provider.value) is None:
                return False  # deleted by someone else in between: the outcome the caller wanted
            raise
        return True

    try:
        return _run_keyring_operation(work, action="delete the key", timeout_s=timeout_s)
    finally:
        _changed(provider)


def _read_key(provider: ProviderName, *, timeout_s: float) -> str | None:
    def work(backend: Any) -> str | None:
        value = backend.get_password(CREDENTIAL_SERVICE, provider.value)
        if value is not None and not isinstance(value, str):
            raise TypeError("the keyring backend returned a non-text value")
        if value is not None:
            default_redactor().add_secret(value)
        return value

    return _run_keyring_operation(work, action="read the key", timeout_s=timeout_s)


def _check_key_shape(value: str) -> None:
    if not value:
        raise UsageError("the key is empty; paste the provider key on standard input")
    if len(value) > MAX_KEY_LENGTH:
        raise UsageError(f"the key is longer than {MAX_KEY_LENGTH} characters; paste only the key")
    if any(ch.isspace() or not ch.isprintable() for ch in value):
        raise UsageError("the key contains spaces, line breaks or control characters; paste only the key")


def _usable_backend(resolved: list[str]) -> Any:
    """The resolved keyring backend if codeflux may use it; else raise :class:`_StoreUnusable`.

    Runs on the keyring thread (resolving can itself talk to D-Bus). Appends the backend's name to
    ``resolved`` so a later failure can be attributed to it.
    """
    backend = keyring.get_keyring()
    name = _backend_name(backend)
    resolved.append(name)
    refusal = _refusal(backend, name)
    if refusal is not None:
        raise _StoreUnusable(refusal)
    return backend


def _backend_name(backend: object) -> str:
    return f"{type(backend).__module__}.{type(backend).__qualname__}"


def _refusal(backend: object, name: str) -> CredentialStoreStatus | None:
    """Why ``backend`` must not hold keys, or ``None`` if it is a trusted OS credential store."""
    if name in _TRUSTED_BACKENDS:
        return None
    if name in _NO_STORE_BACKENDS:
        return CredentialStoreStatus(
            backend=name, state=CredentialStoreState.MISSING, reason=_missing_reason(name), fix=_fix()
        )
    if name == _CHAINER_BACKEND:
        members = [_backend_name(member) for member in getattr(backend, "backends", [])]
        if not members:
            return CredentialStoreStatus(
                backend=name,
                state=CredentialStoreState.MISSING,
                reason="keyring has no backends to chain, so no OS credential store is available",
                fix=_fix(),
            )
        untrusted = [member for member in members if member not in _TRUSTED_BACKENDS]
        if not untrusted:
            return None
        name = f"{name} over {', '.join(untrusted)}"
    return CredentialStoreStatus(
        backend=name,
        state=CredentialStoreState.REFUSED,
        reason=(
            "keyring is set to a backend that is not an OS credential store codeflux trusts "
            "(it may keep keys in a plaintext file); codeflux never stores keys there"
        ),
        fix=f"remove the setting that selects it (PYTHON_KEYRING_BACKEND or keyringrc.cfg), then {_fix()}",
    )


def _missing_reason(name: str) -> str:
    if name.endswith(".null.Keyring"):
        return "keyring is set to its null backend, which keeps nothing"
    if sys.platform.startswith("linux"):
        if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            return (
                "keyring found no OS credential store: there is no D-Bus session bus "
                "(DBUS_SESSION_BUS_ADDRESS is not set), so no Secret Service can answer"
            )
        return "keyring found no OS credential store: no Secret Service answers on the D-Bus session bus"
    return "keyring found no OS credential store"


def _fix() -> str:
    return _HEADLESS_LINUX_FIX if sys.platform.startswith("linux") else _OTHER_OS_FIX


def _failure_status(exc: Exception, *, backend: str, timeout_s: float) -> CredentialStoreStatus:
    """Map anything that went wrong on the keyring thread to a status (state, reason, fix)."""
    if isinstance(exc, _StoreUnusable):
        return exc.status
    if isinstance(exc, _KeyringTimeout):
        return CredentialStoreStatus(
            backend=backend,
            state=CredentialStoreState.TIMED_OUT,
            reason=f"the OS credential store did not answer within {timeout_s:g} s (D-Bus may be hung)",
            fix=f"restart the session's keyring daemon, or {_fix()}",
        )
    if isinstance(exc, keyring.errors.KeyringLocked):
        return CredentialStoreStatus(
            backend=backend,
            state=CredentialStoreState.FAILED,
            reason="the OS credential store is locked and could not be unlocked",
            fix=f"unlock the login keyring (on a desktop, unlock it when asked), or {_fix()}",
        )
    if isinstance(exc, keyring.errors.NoKeyringError | keyring.errors.InitError):
        return CredentialStoreStatus(
            backend=backend,
            state=CredentialStoreState.FAILED,
            reason=(
                f"the OS credential store could not open its keyring ({type(exc).__name__}); on a machine "
                "without a desktop this usually means the login keyring was never unlocked"
            ),
            fix=_fix(),
        )
    return CredentialStoreStatus(
        backend=backend,
        state=CredentialStoreState.FAILED,
        reason=f"the OS credential store failed ({type(exc).__name__})",
        fix=f"check that the keyring daemon is running and unlocked, or {_fix()}",
    )


def _run_keyring_operation(operation: Callable[[Any], T], *, action: str, timeout_s: float) -> T:
    """``operation(backend)`` on the keyring thread with a usable backend; every failure becomes a
    :class:`CredentialStoreUnavailableError` that says what could not be done, why, and the fix."""
    resolved: list[str] = []

    def work() -> T:
        return operation(_usable_backend(resolved))

    try:
        return _call_on_keyring_thread(work, timeout_s=timeout_s)
    except Exception as exc:  # foreign exceptions stop at this adapter
        status = _failure_status(exc, backend=_first(resolved), timeout_s=timeout_s)
        raise CredentialStoreUnavailableError(f"could not {action}: {status.describe()}") from exc


def _first(resolved: list[str]) -> str:
    return resolved[0] if resolved else "not resolved"


def _call_on_keyring_thread(work: Callable[[], T], *, timeout_s: float) -> T:
    """``work()`` on a daemon thread, waiting at most ``timeout_s``; re-raises what it raised."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except Exception as exc:  # handed to the caller's thread, which maps it
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="codeflux-keyring", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise _KeyringTimeout
    if not outcome:
        raise _KeyringTimeout  # the thread died without a result (BaseException); treat as no answer
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    result: T = value
    return result
