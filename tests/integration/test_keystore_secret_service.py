"""Provider keys in the real OS credential store, and loud refusal wherever there is no usable one.

The ``keyring``-marked tests talk to a real Secret Service (gnome-keyring under ``dbus-run-session``,
see ``tests/fixtures/keyring_service.py``). The others start a fresh Python process with a chosen
environment — no D-Bus at all, a D-Bus that never answers, a plaintext backend — because ``keyring``
picks its backend once per process.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backend
import pytest

from codeflux.credentials import (
    CredentialStoreState,
    Secret,
    delete_provider_key,
    has_provider_key,
    load_provider_key,
    probe_credential_store,
    store_provider_key,
)
from codeflux.domain.errors import CredentialNotFoundError, UsageError
from codeflux.domain.providers import CREDENTIAL_SERVICE, ProviderName
from codeflux.redact import REDACTED, default_redactor

REPO_ROOT = Path(__file__).resolve().parents[2]
FAKE_KEY = "sk-ant-api03-FAKEtestKEYnotREAL0123456789abcdefghij"
FIX_COMMAND = "gnome-keyring-daemon --unlock --components=secrets"


def a_fresh_key() -> str:
    return "sk-ant-api03-test-" + secrets.token_urlsafe(24)


# ------------------------------------------------------------------------- the real Secret Service


@pytest.mark.keyring
def test_the_probe_finds_the_secret_service_usable(secret_service: keyring.backend.KeyringBackend) -> None:
    status = probe_credential_store()
    assert status.usable
    assert status.backend == "keyring.backends.SecretService.Keyring"
    assert (status.reason, status.fix) == (None, None)


@pytest.mark.keyring
def test_a_stored_key_comes_back_as_a_secret(secret_service: keyring.backend.KeyringBackend) -> None:
    key = a_fresh_key()
    reference = store_provider_key(ProviderName.ANTHROPIC, Secret(key))
    assert str(reference) == "os://codeflux-provider/anthropic"
    loaded = load_provider_key(ProviderName.ANTHROPIC)
    assert isinstance(loaded, Secret)
    assert loaded.reveal() == key
    assert has_provider_key(ProviderName.ANTHROPIC)


@pytest.mark.keyring
def test_the_key_lives_under_the_codeflux_provider_service_with_the_provider_as_account(
    secret_service: keyring.backend.KeyringBackend,
) -> None:
    key = a_fresh_key()
    store_provider_key(ProviderName.OPENAI_COMPATIBLE, Secret(key))
    assert secret_service.get_password(CREDENTIAL_SERVICE, "openai-compatible") == key


@pytest.mark.keyring
def test_storing_again_replaces_the_key(secret_service: keyring.backend.KeyringBackend) -> None:
    store_provider_key(ProviderName.OPENAI, Secret(a_fresh_key()))
    newer = a_fresh_key()
    store_provider_key(ProviderName.OPENAI, Secret(newer))
    assert load_provider_key(ProviderName.OPENAI).reveal() == newer


@pytest.mark.keyring
def test_providers_keep_separate_keys(secret_service: keyring.backend.KeyringBackend) -> None:
    first, second = a_fresh_key(), a_fresh_key()
    store_provider_key(ProviderName.ANTHROPIC, Secret(first))
    store_provider_key(ProviderName.OPENAI, Secret(second))
    assert load_provider_key(ProviderName.ANTHROPIC).reveal() == first
    assert load_provider_key(ProviderName.OPENAI).reveal() == second
    assert not has_provider_key(ProviderName.OPENAI_COMPATIBLE)


@pytest.mark.keyring
def test_deleting_is_idempotent(secret_service: keyring.backend.KeyringBackend) -> None:
    store_provider_key(ProviderName.ANTHROPIC, Secret(a_fresh_key()))
    assert delete_provider_key(ProviderName.ANTHROPIC) is True
    assert delete_provider_key(ProviderName.ANTHROPIC) is False
    assert not has_provider_key(ProviderName.ANTHROPIC)
    assert secret_service.get_password(CREDENTIAL_SERVICE, "anthropic") is None


@pytest.mark.keyring
def test_loading_a_key_that_was_never_stored_says_how_to_store_one(
    secret_service: keyring.backend.KeyringBackend,
) -> None:
    with pytest.raises(CredentialNotFoundError, match=r"codeflux provider set --name openai"):
        load_provider_key(ProviderName.OPENAI)


@pytest.mark.keyring
@pytest.mark.security
def test_a_loaded_key_is_hidden_everywhere_the_redactor_runs(
    secret_service: keyring.backend.KeyringBackend,
) -> None:
    key = "unpatterned-" + secrets.token_hex(16)  # matches no key pattern: only exact matching can hide it
    secret_service.set_password(CREDENTIAL_SERVICE, "openai", key)
    load_provider_key(ProviderName.OPENAI)
    assert default_redactor().redact(f"echo {key}") == f"echo {REDACTED}"


@pytest.mark.keyring
@pytest.mark.parametrize("bad", ["", "two words", "line\nbreak", "x" * 5000])
def test_a_malformed_key_is_refused_before_anything_is_stored(
    secret_service: keyring.backend.KeyringBackend, bad: str
) -> None:
    with pytest.raises(UsageError):
        store_provider_key(ProviderName.ANTHROPIC, Secret(bad))
    assert secret_service.get_password(CREDENTIAL_SERVICE, "anthropic") is None


# ------------------------------------------------------------ no usable store: fail loudly with the fix

CHILD_SCRIPT = textwrap.dedent(
    f"""
    import json
    from codeflux.credentials import Secret, load_provider_key, probe_credential_store, store_provider_key
    from codeflux.domain.errors import CodefluxError
    from codeflux.domain.providers import ProviderName

    status = probe_credential_store(timeout_s=TIMEOUT)
    report = {{"backend": status.backend, "usable": status.usable, "state": status.state.value,
              "reason": status.reason, "fix": status.fix, "errors": {{}}}}
    provider = ProviderName.ANTHROPIC
    for name, attempt in (
        ("store", lambda: store_provider_key(provider, Secret({FAKE_KEY!r}), timeout_s=TIMEOUT)),
        ("load", lambda: load_provider_key(provider, timeout_s=TIMEOUT)),
    ):
        try:
            attempt()
            report["errors"][name] = None
        except CodefluxError as error:
            report["errors"][name] = [type(error).__name__, str(error)]
    print(json.dumps(report))
    """
)


def run_in_fresh_process(
    home: Path,
    *,
    timeout_s: float = 10.0,
    env: dict[str, str] | None = None,
    import_from: Path | None = None,
    launcher: tuple[str, ...] = (),
) -> dict[str, object]:
    """Run CHILD_SCRIPT in a new interpreter with HOME=home, no D-Bus and no keyring settings but ``env``.

    The script goes in on stdin, so the fake key never appears in any process's argv.
    """
    dropped = {"DBUS_SESSION_BUS_ADDRESS", "PYTHON_KEYRING_BACKEND", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR"}
    child_env = {name: value for name, value in os.environ.items() if name not in dropped}
    paths = [str(REPO_ROOT), *([str(import_from)] if import_from else [])]
    child_env.update({"HOME": str(home), "PYTHONPATH": os.pathsep.join(paths), **(env or {})})
    result = subprocess.run(
        [*launcher, sys.executable, "-"],
        input=CHILD_SCRIPT.replace("TIMEOUT", repr(timeout_s)),
        capture_output=True, text=True, env=child_env, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
    return report


def files_holding(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.mark.security
def test_without_d_bus_the_probe_says_unusable_and_names_the_fix(tmp_path: Path) -> None:
    report = run_in_fresh_process(tmp_path)
    assert report["usable"] is False
    assert report["state"] == CredentialStoreState.MISSING.value
    assert report["backend"] == "keyring.backends.fail.Keyring"
    assert "DBUS_SESSION_BUS_ADDRESS is not set" in str(report["reason"])
    assert FIX_COMMAND in str(report["fix"])
    assert "dbus-run-session" in str(report["fix"])
    assert "apt-get install gnome-keyring dbus dbus-daemon" in str(report["fix"])


@pytest.mark.security
def test_without_d_bus_storing_a_key_fails_loudly_and_writes_nothing(tmp_path: Path) -> None:
    report = run_in_fresh_process(tmp_path)
    errors = report["errors"]
    assert isinstance(errors, dict)
    kind, message = errors["store"]
    assert kind == "CredentialStoreUnavailableError"
    assert message.startswith("could not store the key: no usable OS credential store")
    assert FIX_COMMAND in message
    assert FAKE_KEY not in message
    assert errors["load"][0] == "CredentialStoreUnavailableError"
    assert files_holding(tmp_path, FAKE_KEY) == []


PLAINTEXT_BACKEND = '''
import json, os, pathlib
from keyring.backend import KeyringBackend

class Keyring(KeyringBackend):
    """Keeps passwords in a JSON file in HOME: exactly what codeflux must never use."""
    priority = 1
    path = pathlib.Path(os.environ["HOME"]) / "plaintext-keyring.json"

    def _all(self):
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def get_password(self, service, username):
        return self._all().get(f"{service}/{username}")

    def set_password(self, service, username, password):
        entries = self._all()
        entries[f"{service}/{username}"] = password
        self.path.write_text(json.dumps(entries))

    def delete_password(self, service, username):
        entries = self._all()
        entries.pop(f"{service}/{username}")
        self.path.write_text(json.dumps(entries))
'''


@pytest.mark.security
def test_a_plaintext_keyring_backend_is_refused_even_when_keyring_is_told_to_use_it(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "plainfile_backend.py").write_text(PLAINTEXT_BACKEND)
    home = tmp_path / "home"
    home.mkdir()
    report = run_in_fresh_process(
        home, env={"PYTHON_KEYRING_BACKEND": "plainfile_backend.Keyring"}, import_from=plugins
    )
    assert report["usable"] is False
    assert report["state"] == CredentialStoreState.REFUSED.value
    assert report["backend"] == "plainfile_backend.Keyring"
    assert "plaintext" in str(report["reason"])
    assert "PYTHON_KEYRING_BACKEND" in str(report["fix"])
    errors = report["errors"]
    assert isinstance(errors, dict)
    assert errors["store"][0] == "CredentialStoreUnavailableError"
    assert not (home / "plaintext-keyring.json").exists()
    assert files_holding(tmp_path, FAKE_KEY) == []


def test_keyrings_null_backend_counts_as_no_store(tmp_path: Path) -> None:
    report = run_in_fresh_process(tmp_path, env={"PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"})
    assert report["state"] == CredentialStoreState.MISSING.value
    assert "null backend" in str(report["reason"])


@pytest.fixture
def silent_d_bus() -> Iterator[str]:
    """A session-bus address whose socket accepts connections and never answers (a hung D-Bus)."""
    directory = tempfile.mkdtemp(prefix="cfx-bus-")  # short: Unix socket paths are limited to ~100 bytes
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(os.path.join(directory, "bus"))
        listener.listen(16)
        yield f"unix:path={directory}/bus"
    finally:
        listener.close()
        shutil.rmtree(directory, ignore_errors=True)


def test_a_hung_d_bus_cannot_hang_the_probe_or_a_store(tmp_path: Path, silent_d_bus: str) -> None:
    report = run_in_fresh_process(tmp_path, timeout_s=1.0, env={"DBUS_SESSION_BUS_ADDRESS": silent_d_bus})
    assert report["usable"] is False
    assert report["state"] == CredentialStoreState.TIMED_OUT.value
    assert "did not answer within 1 s" in str(report["reason"])
    errors = report["errors"]
    assert isinstance(errors, dict)
    assert errors["store"][0] == "CredentialStoreUnavailableError"
    assert "did not answer" in errors["store"][1]


LOCKED_KEYRING_SESSION = (
    "dbus-run-session", "--", "sh", "-c",
    'gnome-keyring-daemon --start --components=secrets >/dev/null 2>&1; exec "$@"', "sh",
)  # fmt: skip


def test_a_secret_service_whose_keyring_was_never_unlocked_is_reported_with_the_fix(tmp_path: Path) -> None:
    missing = [tool for tool in ("dbus-run-session", "gnome-keyring-daemon") if shutil.which(tool) is None]
    if missing:
        if os.environ.get("CODEFLUX_TEST_REQUIRE_KEYRING") == "1":
            pytest.fail(f"CODEFLUX_TEST_REQUIRE_KEYRING=1 but {missing} are not installed")
        pytest.skip(f"needs {missing}")
    report = run_in_fresh_process(tmp_path, launcher=LOCKED_KEYRING_SESSION)
    assert report["usable"] is False
    assert report["backend"] == "keyring.backends.SecretService.Keyring"
    assert report["state"] == CredentialStoreState.FAILED.value
    assert "never unlocked" in str(report["reason"])
    assert FIX_COMMAND in str(report["fix"])
    errors = report["errors"]
    assert isinstance(errors, dict)
    assert errors["store"][0] == "CredentialStoreUnavailableError"
    assert files_holding(tmp_path, FAKE_KEY) == []
