"""`codeflux provider …` against the real Secret Service, through the real CLI process."""

from __future__ import annotations

from pathlib import Path

import keyring.backend
import pytest

from codeflux.domain.providers import CREDENTIAL_SERVICE
from tests.fixtures.cli import run_codeflux
from tests.fixtures.provider_servers import ProviderServer, Reply, a_test_key, json_reply

KEY = "sk-ant-api03-" + "Q" * 40 + "-provider-command-test"

pytestmark = pytest.mark.keyring


def _database_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(data_dir.glob("codeflux.sqlite3*")) if p.is_file())


def test_set_reads_the_key_from_stdin_and_sqlite_keeps_only_a_reference(
    tmp_path: Path, secret_service: keyring.backend.KeyringBackend
) -> None:
    run = run_codeflux("provider", "set", "--name", "anthropic", data_dir=tmp_path, stdin=KEY + "\n")
    assert run.code == 0, run.err
    assert "credential stored" in run.out
    assert secret_service.get_password(CREDENTIAL_SERVICE, "anthropic") == KEY
    stored = _database_bytes(tmp_path)
    assert b"os://codeflux-provider/anthropic" in stored
    assert KEY.encode() not in stored
    assert KEY not in run.out + run.err


def test_setting_again_rotates_the_key(tmp_path: Path, secret_service: keyring.backend.KeyringBackend) -> None:
    assert run_codeflux("provider", "set", "--name", "openai", data_dir=tmp_path, stdin=KEY).code == 0
    again = run_codeflux("provider", "set", "--name", "openai", data_dir=tmp_path, stdin=KEY + "-rotated")
    assert again.code == 0
    assert "credential updated" in again.out
    assert secret_service.get_password(CREDENTIAL_SERVICE, "openai") == KEY + "-rotated"


def test_test_reads_back_locally_and_says_the_provider_was_not_contacted(
    tmp_path: Path, secret_service: keyring.backend.KeyringBackend
) -> None:
    missing = run_codeflux("provider", "test", "--name", "anthropic", data_dir=tmp_path)
    assert missing.code == 3
    assert "provider set --name anthropic" in missing.err
    run_codeflux("provider", "set", "--name", "anthropic", data_dir=tmp_path, stdin=KEY)
    present = run_codeflux("provider", "test", "--name", "anthropic", data_dir=tmp_path)
    assert present.code == 0
    assert "did not contact the provider" in present.out
    assert KEY not in present.out


def test_delete_is_idempotent_and_removes_key_and_reference(
    tmp_path: Path, secret_service: keyring.backend.KeyringBackend
) -> None:
    run_codeflux("provider", "set", "--name", "openai-compatible", data_dir=tmp_path, stdin=KEY)
    first = run_codeflux("provider", "delete", "--name", "openai-compatible", data_dir=tmp_path)
    assert first.code == 0 and "credential deleted" in first.out
    assert secret_service.get_password(CREDENTIAL_SERVICE, "openai-compatible") is None
    inspect = run_codeflux("inspect", "providers", data_dir=tmp_path)
    assert inspect.code == 0
    assert "openai-compatible" not in inspect.out
    second = run_codeflux("provider", "delete", "--name", "openai-compatible", data_dir=tmp_path)
    assert second.code == 0 and "nothing was stored" in second.out


def test_list_shows_names_and_stored_yes_or_no_never_values(
    tmp_path: Path, secret_service: keyring.backend.KeyringBackend
) -> None:
    run_codeflux("provider", "set", "--name", "openai", data_dir=tmp_path, stdin=KEY)
    listing = run_codeflux("provider", "list", data_dir=tmp_path)
    assert listing.code == 0
    lines = {line.split()[0]: line for line in listing.out.splitlines()}
    assert "stored: yes" in lines["openai"]
    assert "stored: no" in lines["anthropic"]
    assert KEY not in listing.out


def test_an_empty_stdin_is_a_usage_error_and_stores_nothing(
    tmp_path: Path, secret_service: keyring.backend.KeyringBackend
) -> None:
    run = run_codeflux("provider", "set", "--name", "anthropic", data_dir=tmp_path, stdin="")
    assert run.code == 2
    assert "no key on standard input" in run.err
    assert secret_service.get_password(CREDENTIAL_SERVICE, "anthropic") is None
    assert not (tmp_path / "codeflux.sqlite3").exists()


@pytest.mark.security
def test_a_key_given_as_an_argument_is_refused_and_never_echoed(
    tmp_path: Path, secret_service: keyring.backend.KeyringBackend
) -> None:
    run = run_codeflux("provider", "set", "--name", "anthropic", KEY, data_dir=tmp_path)
    assert run.code == 2
    assert "standard input" in run.err
    assert KEY not in run.out + run.err
    assert secret_service.get_password(CREDENTIAL_SERVICE, "anthropic") is None


def test_without_a_credential_store_set_exits_3_with_the_fix_and_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    run = run_codeflux(
        "provider", "set", "--name", "anthropic", data_dir=tmp_path / "data", stdin=KEY,
        env={"HOME": str(home)}, drop_env=("DBUS_SESSION_BUS_ADDRESS",),
    )
    assert run.code == 3
    assert "gnome-keyring" in run.err and "dbus-run-session" in run.err
    assert run.err.count("\n") == 1
    assert not (tmp_path / "data").exists()
    assert KEY not in run.err


def test_list_without_a_credential_store_says_unknown_never_no(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    listing = run_codeflux("provider", "list", data_dir=tmp_path / "data", env={"HOME": str(home)},
                           drop_env=("DBUS_SESSION_BUS_ADDRESS",))
    assert listing.code == 0, listing.err
    lines = listing.out.splitlines()
    rows = [line for line in lines if "stored:" in line]
    assert len(rows) == 3
    assert all("stored: unknown" in row for row in rows), rows
    assert lines[-1].startswith("provider: the OS credential store is not usable (")
    assert "dbus-run-session" in lines[-1]


# ─── provider test --live (issue 21 item 10) ──────────────────────────────────────────────────────


def test_live_test_asks_for_the_endpoint_approval_and_a_yes_before_sending_one_free_request(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ProviderServer() as server:
        base_url = server.base_url + "/v1"
        live = ("provider", "test", "--name", "openai-compatible", "--live", "--base-url", base_url, "--no-key")
        refused = run_codeflux(*live, "--yes", data_dir=data)
        assert refused.code == 4, refused.err
        assert (f"`codeflux provider approve-endpoint --name openai-compatible --base-url {base_url}`"
                in refused.err)
        assert run_codeflux("provider", "approve-endpoint", "--name", "openai-compatible", "--base-url", base_url,
                            data_dir=data).code == 0
        unasked = run_codeflux(*live, data_dir=data)  # no terminal to ask at, no --yes
        assert unasked.code == 4 and "add --yes to send it" in unasked.err
        assert f"one request with no key to {base_url}/models" in unasked.err
        assert server.requests == []  # nothing was sent before the approval and the yes

        server.enqueue(json_reply({"object": "list", "data": [{"id": "m1"}, {"id": "m2"}]},
                                  headers=(("x-request-id", "req-42"),)))
        sent = run_codeflux(*live, "--yes", data_dir=data)
        assert sent.code == 0, sent.err
        assert sent.out.strip() == (f"provider openai-compatible: {base_url}/models answered (request id req-42) "
                                    "and accepted no key; it lists 2 model(s)")
        [(method, path)] = [(r.method, r.path) for r in server.requests]
        assert (method, path) == ("GET", "/v1/models")


def test_live_test_sends_the_environments_key_and_reports_a_refusal_without_showing_it(tmp_path: Path) -> None:
    data, key = tmp_path / "data", a_test_key()
    with ProviderServer() as server:
        base_url = server.base_url + "/v1"
        assert run_codeflux("provider", "approve-endpoint", "--name", "openai-compatible", "--base-url", base_url,
                            data_dir=data).code == 0
        server.enqueue(Reply(status=401, headers=(("content-type", "application/json"),), echo_header="authorization",
                             chunks=(b'{"error": {"message": "Incorrect API key provided: {echo}"}}',)))
        refused = run_codeflux("provider", "test", "--name", "openai-compatible", "--live", "--base-url", base_url,
                               "--yes", data_dir=data, env={"CODEFLUX_OPENAI_COMPATIBLE_API_KEY": key})
        assert refused.code != 0 and "401" in refused.err, refused.err
        assert key not in refused.out + refused.err
        [request] = server.requests
        assert request.headers["authorization"] == f"Bearer {key}"
    stray = run_codeflux("provider", "test", "--name", "anthropic", "--yes", data_dir=data)
    assert stray.code == 2 and "go with --live" in stray.err
