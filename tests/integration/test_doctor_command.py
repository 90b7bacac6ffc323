"""`codeflux doctor` against real files, a real socket and the real credential store."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import apsw

from tests.fixtures.cli import CliRun, run_codeflux
from tests.fixtures.keyring_service import SECRET_SERVICE_READER

pytestmark = SECRET_SERVICE_READER  # doctor reads which provider keys the real store holds


def _doctor(data_dir: Path, *extra: str, **kwargs: object) -> tuple[CliRun, dict[str, dict[str, object]]]:
    run = run_codeflux("doctor", "--json", *extra, data_dir=data_dir, **kwargs)  # type: ignore[arg-type]
    report = json.loads(run.out)
    return run, {check["id"]: check for check in report["checks"]}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_fresh_machine_reports_every_check_and_creates_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    run = run_codeflux("doctor", "--port", str(_free_port()), data_dir=data)
    for title in ("Python and SQLite", "git", "data directory", "database", "OS credential store",
                  "provider credentials", "worktree space", "loopback port", "tasks needing recovery"):
        assert title in run.out
    assert "will be created" in run.out
    assert not data.exists()
    for line in run.out.splitlines():
        if line.startswith(("database", "provider credentials")):
            assert "missing" in line


def test_every_non_ok_row_carries_a_next_step(tmp_path: Path) -> None:
    _, checks = _doctor(tmp_path / "data", "--port", str(_free_port()))
    for check in checks.values():
        if check["status"] != "ok":
            assert check["remediation"], check["id"]


def test_a_corrupt_database_is_failed_never_missing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_codeflux("migrate", data_dir=data).code == 0
    (data / "codeflux.sqlite3").write_bytes(b"garbage, not SQLite" * 1000)
    run, checks = _doctor(data, "--port", str(_free_port()))
    assert checks["database"]["status"] == "failed"
    assert "corrupt" in str(checks["database"]["summary"])
    assert run.code == 3


def test_newer_and_older_databases_get_distinct_statuses(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_codeflux("migrate", data_dir=data).code == 0
    _, checks = _doctor(data, "--port", str(_free_port()))
    assert checks["database"]["status"] == "ok"
    conn = apsw.Connection(str(data / "codeflux.sqlite3"))
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    _, newer = _doctor(data, "--port", str(_free_port()))
    assert newer["database"]["status"] == "failed"
    assert "newer" in str(newer["database"]["summary"])
    conn = apsw.Connection(str(data / "codeflux.sqlite3"))
    conn.execute("PRAGMA user_version = 0")
    conn.close()
    _, older = _doctor(data, "--port", str(_free_port()))
    assert older["database"]["status"] == "degraded"
    assert "codeflux migrate" in str(older["database"]["remediation"])


def test_a_data_dir_that_is_a_file_fails_the_data_directory_check(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("")
    run, checks = _doctor(file, "--port", str(_free_port()))
    assert checks["data-directory"]["status"] == "failed"
    assert run.code == 3


def test_a_port_held_by_another_program_is_degraded_with_a_next_step(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        _, checks = _doctor(tmp_path / "data", "--port", str(port))
    assert checks["loopback-port"]["status"] == "degraded"
    assert "--address" in str(checks["loopback-port"]["remediation"])


def test_without_a_secret_service_the_credential_store_is_missing_and_blocks(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    run, checks = _doctor(tmp_path / "data", "--port", str(_free_port()),
                          env={"HOME": str(home)}, drop_env=("DBUS_SESSION_BUS_ADDRESS",))
    assert checks["credential-store"]["status"] == "missing"
    assert "dbus-run-session" in str(checks["credential-store"]["remediation"])
    assert run.code == 3


def test_doctor_names_the_box_commands_run_in_and_says_when_there_is_none(tmp_path: Path) -> None:
    _, boxed = _doctor(tmp_path / "data", "--port", str(_free_port()))
    assert (boxed["confinement"]["status"], "bubblewrap" in str(boxed["confinement"]["summary"])) == ("ok", True)

    _, bare = _doctor(tmp_path / "data", "--port", str(_free_port()), env={"CODEFLUX_CONFINEMENT": "none"})
    assert bare["confinement"]["status"] == "degraded"
    assert "degraded: commands run unconfined" in str(bare["confinement"]["summary"])
    assert "CODEFLUX_CONFINEMENT" in str(bare["confinement"]["remediation"])

    _, impossible = _doctor(tmp_path / "data", "--port", str(_free_port()), env={"CODEFLUX_CONFINEMENT": "sandbox"})
    assert impossible["confinement"]["status"] == "failed"


def test_doctor_shows_the_config_file_and_an_invalid_one_blocks(tmp_path: Path) -> None:
    """The real CLI: where the config file is, what it sets, and a file codeflux refuses named with its key."""
    xdg = tmp_path / "xdg"
    env = {"XDG_CONFIG_HOME": str(xdg)}
    _, checks = _doctor(tmp_path / "data", "--port", str(_free_port()), env=env)
    assert checks["config-file"]["status"] == "ok" and "none at" in str(checks["config-file"]["summary"])
    (xdg / "codeflux").mkdir(parents=True)
    (xdg / "codeflux" / "config.toml").write_text('[provider]\nname = "anthropic"\ncheap_model = "claude-haiku-4-5"\n')
    _, checks = _doctor(tmp_path / "data", "--port", str(_free_port()), env=env)
    assert checks["config-file"]["status"] == "ok"
    assert "provider anthropic (claude-haiku-4-5)" in str(checks["config-file"]["summary"])
    (xdg / "codeflux" / "config.toml").write_text('[provider]\nname = "anthropic"\nmodel = "x"\n')
    run, checks = _doctor(tmp_path / "data", "--port", str(_free_port()), env=env)
    assert checks["config-file"]["status"] == "failed" and "[provider] model" in str(checks["config-file"]["summary"])
    assert run.code != 0
    # issue 21 item 5: the route of provider calls, and a CA bundle that cannot be read blocks
    bundle = tmp_path / "corp-ca.pem"
    (xdg / "codeflux" / "config.toml").write_text(f'[network]\nproxy = "environment"\nca_bundle = "{bundle}"\n')
    _, checks = _doctor(tmp_path / "data", "--port", str(_free_port()), env=env)
    summary = str(checks["config-file"]["summary"])
    assert checks["config-file"]["status"] == "failed" and f"{bundle} (cannot be read)" in summary
    assert "through the environment's proxy (HTTPS_PROXY, NO_PROXY)" in summary
    bundle.write_text("certificates\n")
    _, checks = _doctor(tmp_path / "data", "--port", str(_free_port()), env=env)
    assert checks["config-file"]["status"] == "ok"
