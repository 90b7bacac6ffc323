"""`codeflux diagnostics export --output PATH`: versions, counts and states only; scanned for key patterns
and for the provider keys really stored in the OS credential store before a byte is written; refuses on a
hit naming the kind, never the value; O_EXCL and 0600."""

from __future__ import annotations

import json
import os
import platform
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import codeflux
from codeflux.cli.main import main
from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.events import AgentMessage
from codeflux.domain.providers import ProviderName
from codeflux.store.app_logs import append_app_log
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.location import DataLocation
from codeflux.store.migrations import supported_schema_version
from codeflux.store.provider_credentials import record_provider_credential_reference

pytestmark = pytest.mark.security

REPO_ROOT = Path(codeflux.__file__).resolve().parent.parent
PLANTED_PATTERN_KEY = "sk-ant-api03-" + "Zq7" * 15
REQUIREMENT_TEXT = "build a rocket that lands on the moon"
MODEL_OUTPUT = "Sure! Here is the patch you asked for"


def export(capsys: pytest.CaptureFixture[str], data_dir: Path, output: Path) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data_dir), "diagnostics", "export", "--output", str(output)])
    out, err = capsys.readouterr()
    return code, out, err


def strings_in(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env.update(extra)
    return env


@pytest.fixture
def seeded(db: Database) -> Database:
    """A database whose rows hold the kinds of content a bundle must never carry."""
    append_app_log(db, level="error", event="provider-failed",
                   fields_json=json.dumps({"api_key": PLANTED_PATTERN_KEY, "requirement": REQUIREMENT_TEXT}),
                   at_us=1)

    def content(tx: Transaction) -> None:
        tx.execute("INSERT INTO settings (key, value_json, created_at_us, updated_at_us) VALUES (?, ?, 1, 1)",
                   ("last.requirement", json.dumps(REQUIREMENT_TEXT)))
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=AgentMessage(
            conversation_id=1, attempt=1, text=MODEL_OUTPUT, truncated=False, redacted=False))

    db.write(content)
    record_provider_credential_reference(db, provider="anthropic", credential_ref="os://codeflux-provider/anthropic")
    return db


def test_the_bundle_holds_versions_counts_and_states_but_no_content_or_paths(
    seeded: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "bundle.json"

    code, out, err = export(capsys, data_location.directory, output)

    assert code == 0, err
    text = output.read_text(encoding="ascii")
    bundle = json.loads(text)
    for forbidden in (PLANTED_PATTERN_KEY, REQUIREMENT_TEXT, MODEL_OUTPUT, str(data_location.directory),
                      str(tmp_path), "last.requirement", "os://"):
        assert forbidden not in text
    assert not [s for s in strings_in(bundle) if os.sep in s], "no value may look like a path"
    assert set(bundle) == {"bundle_format", "created_at", "versions", "schema", "storage", "host",
                           "prerequisites", "secret_scan", "excluded"}
    assert bundle["versions"]["codeflux"] == codeflux.__version__
    assert set(bundle["versions"]) >= {"python", "sqlite", "apsw", "pygit2", "libgit2"}
    current = supported_schema_version()
    assert bundle["schema"] == {"database": current, "supported": current}
    storage = bundle["storage"]
    assert storage["status"] == "ok"
    assert storage["table_rows"]["app_logs"] == 1 and storage["table_rows"]["settings"] == 1
    assert storage["providers_stored"] == {"anthropic": True, "openai": False, "openai-compatible": False}
    assert storage["migrations_succeeded"] == current and storage["migrations_failed"] == 0
    assert storage["database_bytes"] > 0
    assert {"os", "arch", "cpu_count"} <= set(bundle["host"])
    assert {entry["check"] for entry in bundle["prerequisites"]} >= {"git", "database", "credential-store"}
    assert str(output) in out and "versions, counts and states only" in out


def test_the_bundle_file_is_created_0600_even_with_a_permissive_umask(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "bundle.json"
    previous = os.umask(0)
    try:
        code, _, err = export(capsys, data_location.directory, output)
    finally:
        os.umask(previous)

    assert code == 0, err
    assert stat.S_IMODE(output.stat().st_mode) == 0o600


def test_an_existing_output_is_never_overwritten_and_exits_2(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "bundle.json"
    output.write_text("keep me")
    output.chmod(0o644)

    code, out, err = export(capsys, data_location.directory, output)

    assert code == 2
    assert "already exists" in err
    assert out == ""
    assert output.read_text() == "keep me"
    assert stat.S_IMODE(output.stat().st_mode) == 0o644


def test_a_symlink_at_the_output_path_is_not_followed(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "victim"
    target.write_text("do not touch")
    link = tmp_path / "bundle.json"
    link.symlink_to(target)

    code, _, _ = export(capsys, data_location.directory, link)

    assert code == 2
    assert target.read_text() == "do not touch"


def test_an_output_in_a_missing_directory_fails_with_the_reason_and_creates_nothing(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = export(capsys, data_location.directory, tmp_path / "missing" / "bundle.json")

    assert code == 1
    assert "does not exist" in err
    assert not (tmp_path / "missing").exists()


def test_a_key_pattern_in_the_bundle_refuses_the_export_and_names_only_the_kind(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bundle carries no content, so a secret can only get in through a value it does carry.
    monkeypatch.setattr(codeflux, "__version__", f"0.1.0+{PLANTED_PATTERN_KEY}")
    output = tmp_path / "bundle.json"

    code, out, err = export(capsys, data_location.directory, output)

    assert code == 1
    assert "anthropic-api-key" in err and "nothing was written" in err
    assert PLANTED_PATTERN_KEY not in out + err
    assert not output.exists()


@pytest.mark.usefixtures("secret_service", "db")
def test_a_stored_provider_key_in_the_bundle_refuses_the_export_and_names_the_provider(
    data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A key with no recognisable shape: only the scan for the *actually stored* keys can catch it.
    stored = "q8Rw2Lp0Vx7Nc4Tz9Hb1Ks6Gd3Mf5Jy"
    store_provider_key(ProviderName.OPENAI, Secret(stored))
    monkeypatch.setattr(platform, "release", lambda: stored)
    output = tmp_path / "bundle.json"

    code, out, err = export(capsys, data_location.directory, output)

    assert code == 1
    assert "the stored key of provider openai" in err
    assert stored not in out + err
    assert not output.exists()


@pytest.mark.usefixtures("secret_service", "db")
def test_with_the_real_credential_store_the_bundle_says_the_stored_keys_were_scanned(
    data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_provider_key(ProviderName.ANTHROPIC, Secret("k3Yv9Qm2Xr7Lp4Wz8Nt1Bc6Hd5Fg0Js"))
    output = tmp_path / "bundle.json"

    code, _, err = export(capsys, data_location.directory, output)

    assert code == 0, err
    assert json.loads(output.read_text())["secret_scan"]["stored_provider_keys"] == "scanned (1 stored key)"


def test_without_a_credential_store_the_bundle_says_keys_were_not_scanned_and_patterns_still_are(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    env = _child_env(PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    clean_output = tmp_path / "clean.json"
    planted_output = tmp_path / "planted.json"
    base = [sys.executable, "-c",
            "import sys, codeflux; from codeflux.cli.main import main;"
            " codeflux.__version__ += sys.argv[1]; sys.exit(main(sys.argv[2:]))"]
    tail = ["--data-dir", str(data_location.directory), "diagnostics", "export", "--output"]

    clean = subprocess.run([*base, "", *tail, str(clean_output)],
                           capture_output=True, text=True, env=env, timeout=120, check=False)
    planted = subprocess.run([*base, f"+{PLANTED_PATTERN_KEY}", *tail, str(planted_output)],
                             capture_output=True, text=True, env=env, timeout=120, check=False)

    assert clean.returncode == 0, clean.stderr
    scan = json.loads(clean_output.read_text())["secret_scan"]
    assert scan["stored_provider_keys"].startswith("not scanned: no usable OS credential store")
    assert "not scanned" in clean.stdout
    assert planted.returncode == 1
    assert "anthropic-api-key" in planted.stderr
    assert PLANTED_PATTERN_KEY not in planted.stdout + planted.stderr
    assert not planted_output.exists()


def test_export_works_without_a_database_and_says_so_without_creating_one(
    data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "bundle.json"

    code, _, err = export(capsys, data_location.directory, output)

    assert code == 0, err
    bundle = json.loads(output.read_text())
    assert bundle["storage"]["status"] == "missing"
    assert bundle["schema"]["database"] is None
    assert not data_location.directory.exists()


@pytest.mark.parametrize("argv", [["diagnostics"], ["diagnostics", "export"], ["diagnostics", "dump", "--output", "x"],
                                  ["diagnostics", "export", "--output", ""]])
def test_a_missing_action_or_output_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code = main(["--data-dir", str(tmp_path / "data"), *argv])
    out, _ = capsys.readouterr()

    assert code == 2
    assert out == ""
