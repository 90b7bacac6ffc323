from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import apsw
import pytest

from codeflux.cli.main import main
from codeflux.domain.errors import (
    DatabaseNewerError,
    MigrationChecksumError,
    MigrationFailedError,
    MigrationLockedError,
)
from codeflux.store import migrations as migrations_module
from codeflux.store.location import DataLocation
from codeflux.store.migrations import load_shipped_migrations, migrate_database, supported_schema_version

REPO_MIGRATIONS = Path(__file__).resolve().parents[3] / "migrations"


def _migration_dir(tmp_path: Path, extra_sql: str | None) -> Path:
    folder = tmp_path / "migrations"
    shutil.copytree(REPO_MIGRATIONS, folder)
    if extra_sql is not None:
        number = len(list(folder.glob("*.sql"))) + 1
        (folder / f"{number:06d}_extra.sql").write_text(extra_sql)
    return folder


def _rows(location: DataLocation, sql: str) -> list[tuple[object, ...]]:
    conn = apsw.Connection(str(location.database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


def _seed_setting(location: DataLocation) -> None:
    conn = apsw.Connection(str(location.database))
    conn.execute("INSERT INTO settings VALUES ('kept', '\"yes\"', 0, 1, 1)")
    conn.close()


def test_a_new_database_is_created_at_the_newest_schema_without_a_backup(data_location: DataLocation) -> None:
    report = migrate_database(data_location)
    assert report.to_version == supported_schema_version()
    assert report.backup_path is None
    results = _rows(data_location, "SELECT version, result FROM migration_history ORDER BY id")
    assert (1, "succeeded") in results
    assert not data_location.backups.exists()


def test_upgrading_takes_a_private_online_backup_first(tmp_path: Path, data_location: DataLocation) -> None:
    migrate_database(data_location)
    _seed_setting(data_location)
    newer = load_shipped_migrations(_migration_dir(tmp_path, "CREATE TABLE extra (id INTEGER PRIMARY KEY) STRICT;"))
    report = migrate_database(data_location, migrations=newer)
    assert report.applied == (len(newer),)
    assert report.backup_path is not None
    assert report.backup_path.parent == data_location.backups
    assert stat.S_IMODE(report.backup_path.stat().st_mode) == 0o600
    backup = apsw.Connection(str(report.backup_path), flags=apsw.SQLITE_OPEN_READONLY)
    assert list(backup.execute("SELECT key FROM settings")) == [("kept",)]
    assert list(backup.execute("PRAGMA user_version")) == [(len(newer) - 1,)]
    backup.close()


def test_a_failing_migration_is_undone_recorded_and_not_retried(tmp_path: Path, data_location: DataLocation) -> None:
    migrate_database(data_location)
    _seed_setting(data_location)
    broken = load_shipped_migrations(
        _migration_dir(tmp_path, "CREATE TABLE half (id INTEGER) STRICT;\nTHIS IS NOT SQL;")
    )
    with pytest.raises(MigrationFailedError) as failed:
        migrate_database(data_location, migrations=broken)
    assert failed.value.backup_path is not None
    assert Path(failed.value.backup_path).exists()
    assert _rows(data_location, "PRAGMA user_version") == [(len(broken) - 1,)]
    assert _rows(data_location, "SELECT key FROM settings") == [("kept",)]
    assert _rows(data_location, "SELECT name FROM sqlite_schema WHERE name = 'half'") == []
    history_before = _rows(data_location, "SELECT count(*) FROM migration_history")

    with pytest.raises(MigrationFailedError, match="failed before"):
        migrate_database(data_location, migrations=broken)
    assert _rows(data_location, "SELECT count(*) FROM migration_history") == history_before


def test_a_migration_killed_before_commit_is_restored_reported_then_retried(
    tmp_path: Path, data_location: DataLocation
) -> None:
    migrate_database(data_location)
    _seed_setting(data_location)
    folder = _migration_dir(tmp_path, "CREATE TABLE extra (id INTEGER PRIMARY KEY) STRICT;")
    child = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from codeflux.store.location import DataLocation
        from codeflux.store.migrations import MigrationFault, load_shipped_migrations, migrate_database

        def crash(point):
            if point is MigrationFault.BEFORE_COMMIT:
                os.kill(os.getpid(), signal.SIGKILL)

        migrate_database(DataLocation(directory=Path({str(data_location.directory)!r})),
                         migrations=load_shipped_migrations(Path({str(folder)!r})), fault=crash)
    """)
    proc = subprocess.run([sys.executable, "-c", child], check=False, capture_output=True)
    assert proc.returncode == -9
    newer = load_shipped_migrations(folder)

    with pytest.raises(MigrationFailedError, match="interrupted") as interrupted:
        migrate_database(data_location, migrations=newer)
    assert interrupted.value.backup_path is not None
    assert _rows(data_location, "SELECT key FROM settings") == [("kept",)]
    assert _rows(data_location, "SELECT result FROM migration_history ORDER BY id DESC LIMIT 1") == [
        ("interrupted",)
    ]

    report = migrate_database(data_location, migrations=newer)
    assert report.to_version == len(newer)
    assert _rows(data_location, "SELECT key FROM settings") == [("kept",)]


def test_a_database_from_a_newer_codeflux_is_refused_without_writing(data_location: DataLocation) -> None:
    migrate_database(data_location)
    conn = apsw.Connection(str(data_location.database))
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    before = data_location.database.read_bytes()
    with pytest.raises(DatabaseNewerError, match="needs a newer codeflux"):
        migrate_database(data_location)
    assert data_location.database.read_bytes() == before


def test_the_cli_exits_3_for_a_newer_database(data_location: DataLocation, capsys: pytest.CaptureFixture[str]) -> None:
    migrate_database(data_location)
    conn = apsw.Connection(str(data_location.database))
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    assert main(["--data-dir", str(data_location.directory), "migrate"]) == 3
    assert "needs a newer codeflux" in capsys.readouterr().err


def test_an_applied_migration_whose_file_changed_is_refused(tmp_path: Path, data_location: DataLocation) -> None:
    migrate_database(data_location)
    folder = _migration_dir(tmp_path, None)
    first = sorted(folder.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited after merge\n")
    with pytest.raises(MigrationChecksumError):
        migrate_database(data_location, migrations=load_shipped_migrations(folder))


def test_a_second_migrator_waits_then_says_the_lock_is_held(
    data_location: DataLocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrate_database(data_location)
    monkeypatch.setattr(migrations_module, "LOCK_WAIT_SECONDS", 0.1)
    fd = os.open(data_location.migration_lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(MigrationLockedError):
            migrate_database(data_location)
    finally:
        os.close(fd)
