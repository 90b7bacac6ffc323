"""`codeflux backup --output PATH`: a consistent snapshot while another process writes, never overwriting,
never touching the user's directories, 0600, and a reason for every failure.

Tests run as root, and root ignores permission bits, so "a directory you cannot write" is made with
the ext4 immutable flag (``chattr +i``), which the kernel enforces even for root, and "a full disk" with
a 1 MiB tmpfs mounted in a private mount namespace (``unshare --mount``); each skips with the reason
where the machine does not allow it.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import codeflux
from codeflux.cli.main import main
from codeflux.store.database import Database, ReadView, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.location import DataLocation
from tests.fixtures.journal import note_event

REPO_ROOT = Path(codeflux.__file__).resolve().parent.parent

WRITER = r"""
import sys, time
from pathlib import Path
from codeflux.domain.events import LogsPurged
from codeflux.store.database import Database
from codeflux.store.events import append_event

database, stop = Path(sys.argv[1]), Path(sys.argv[2])
db = Database.open(database)
written = 0
deadline = time.monotonic() + 60
while not stop.exists() and time.monotonic() < deadline:
    db.write(lambda tx: append_event(tx, session_id="ses_system", event=LogsPurged(deleted=written, before_us=None)))
    written += 1
    if written == 1:
        print("writing", flush=True)
    # A short pause between commits: a writer that re-takes the lock at once starves every other
    # writer past its busy timeout on a loaded machine; the copy still overlaps hundreds of commits.
    time.sleep(0.002)
db.close()
print(written, flush=True)
"""


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def run_cli_process(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeflux", *argv],
        capture_output=True, text=True, env=_child_env(), timeout=120, check=False,
    )


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def sqlite3_shell() -> str:
    found = shutil.which("sqlite3")
    if found is None:
        pytest.fail("the sqlite3 command-line shell is needed as an outside peer (Debian package sqlite3)")
    return found


def seed_events(db: Database, *, count: int, payload_bytes: int) -> None:
    def work(tx: Transaction) -> None:
        for number in range(count):
            append_event(tx, session_id=SYSTEM_SESSION_ID, event=note_event(number, pad=payload_bytes))

    db.write(work)


def live_event_count(database: Path) -> int:
    result = subprocess.run([sqlite3_shell(), "-readonly", str(database), "SELECT count(*) FROM events"],
                            capture_output=True, text=True, check=True, timeout=30)
    return int(result.stdout.strip())


@pytest.fixture
def writer_process(db: Database, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A real second process appending one event per transaction until the stop file appears."""
    stop = tmp_path / "stop-writer"
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db.path), str(stop)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env(),
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        assert first == "writing", process.stderr.read() if process.stderr else first
        yield process, stop
    finally:
        stop.touch()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_backup_taken_while_another_process_writes_is_a_consistent_snapshot_an_outside_peer_can_read(
    db: Database, data_location: DataLocation, tmp_path: Path,
    writer_process: tuple[subprocess.Popen[str], Path],
) -> None:
    seed_events(db, count=4000, payload_bytes=2000)  # several MiB, so the copy overlaps real writes
    process, stop = writer_process
    before = live_event_count(db.path)
    output = tmp_path / "out" / "snapshot.sqlite3"
    output.parent.mkdir()

    result = run_cli_process("--data-dir", str(data_location.directory), "backup", "--output", str(output))

    after = live_event_count(db.path)
    stop.touch()
    assert process.wait(timeout=30) == 0
    assert result.returncode == 0, result.stderr
    assert f"backup: wrote a consistent snapshot to {output}" in result.stdout
    assert after > before, "the writer must have committed while the backup ran"

    peer = subprocess.run(
        [sqlite3_shell(), str(output), "PRAGMA integrity_check; SELECT count(*) FROM events;"
         " SELECT current_sequence FROM sessions WHERE id = 'ses_system';"],
        capture_output=True, text=True, check=True, timeout=60,
    )
    verdict, events_in_snapshot, counter_in_snapshot = peer.stdout.split()
    assert verdict == "ok"
    assert before <= int(events_in_snapshot) <= after
    # One point in time: the journal counter and the rows it counts were copied together.
    assert int(events_in_snapshot) == int(counter_in_snapshot)


def test_a_snapshot_restored_as_a_data_directory_passes_integrity_check(
    db: Database, data_location: DataLocation, tmp_path: Path,
    writer_process: tuple[subprocess.Popen[str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    restored = tmp_path / "restored"
    restored.mkdir()
    code, out, err = run_cli(capsys, "--data-dir", str(data_location.directory), "backup",
                             "--output", str(restored / "codeflux.sqlite3"))
    assert code == 0, err

    code, out, err = run_cli(capsys, "--data-dir", str(restored), "integrity-check")

    assert code == 0, out + err
    assert "integrity-check: ok" in out


def test_backup_output_is_0600_even_with_a_permissive_umask(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "snapshot.sqlite3"
    previous = os.umask(0)
    try:
        code, out, err = run_cli(capsys, "--data-dir", str(data_location.directory), "backup",
                                 "--output", str(output))
    finally:
        os.umask(previous)

    assert code == 0, err
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    assert str(output) in out and "bytes" in out


@pytest.mark.parametrize("mode", [0o755, 0o1777, 0o700])
def test_backup_never_changes_the_mode_of_the_output_directory(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: int
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)

    code, _, err = run_cli(capsys, "--data-dir", str(data_location.directory), "backup",
                           "--output", str(shared / "snapshot.sqlite3"))

    assert code == 0, err
    assert stat.S_IMODE(shared.stat().st_mode) == mode


def test_backup_refuses_an_existing_output_with_exit_2_and_leaves_it_unchanged(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    output = tmp_path / "precious.sqlite3"
    output.write_bytes(b"the user's own file")
    before = output.stat()

    result = run_cli_process("--data-dir", str(data_location.directory), "backup", "--output", str(output))

    assert result.returncode == 2
    assert "already exists" in result.stderr
    assert output.read_bytes() == b"the user's own file"
    assert output.stat().st_mtime_ns == before.st_mtime_ns
    assert stat.S_IMODE(output.stat().st_mode) == stat.S_IMODE(before.st_mode)


def test_backup_refuses_a_dangling_symlink_as_output_and_does_not_follow_it(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "elsewhere.sqlite3"
    link = tmp_path / "link.sqlite3"
    link.symlink_to(target)

    code, _, err = run_cli(capsys, "--data-dir", str(data_location.directory), "backup", "--output", str(link))

    assert code == 2
    assert "already exists" in err
    assert not target.exists()


def test_backup_into_a_missing_directory_says_so_and_creates_nothing(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "such" / "dir"

    code, out, err = run_cli(capsys, "--data-dir", str(data_location.directory), "backup",
                             "--output", str(missing / "snapshot.sqlite3"))

    assert code == 1
    assert "does not exist" in err and "create it first" in err
    assert not (tmp_path / "no").exists()
    assert out == ""


def test_backup_below_a_regular_file_says_the_parent_is_not_a_directory(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")

    code, _, err = run_cli(capsys, "--data-dir", str(data_location.directory), "backup",
                           "--output", str(blocker / "snapshot.sqlite3"))

    assert code == 1
    assert "is not a directory" in err
    assert blocker.read_text() == "not a directory"


@pytest.fixture
def immutable_directory(tmp_path: Path) -> Iterator[Path]:
    """A directory nobody can create files in, root included (ext4 immutable flag)."""
    directory = tmp_path / "immutable"
    directory.mkdir()
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("chattr is not installed")
    made = subprocess.run([chattr, "+i", str(directory)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"this file system does not support the immutable flag: {made.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run([chattr, "-i", str(directory)], check=True)


def test_backup_into_a_directory_that_cannot_be_written_says_why_even_for_root(
    db: Database, data_location: DataLocation, immutable_directory: Path
) -> None:
    mode_before = stat.S_IMODE(immutable_directory.stat().st_mode)

    result = run_cli_process("--data-dir", str(data_location.directory), "backup",
                             "--output", str(immutable_directory / "snapshot.sqlite3"))

    assert result.returncode == 1
    assert "not writable" in result.stderr
    assert list(immutable_directory.iterdir()) == []
    assert stat.S_IMODE(immutable_directory.stat().st_mode) == mode_before


def test_backup_to_a_full_disk_says_the_disk_is_full_and_leaves_nothing_behind(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    seed_events(db, count=2000, payload_bytes=2000)  # ~5 MiB: cannot fit in the 1 MiB file system
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare is not installed")
    mountpoint = tmp_path / "small-disk"
    mountpoint.mkdir()
    script = (
        'mount -t tmpfs -o size=1m tmpfs "$1" || exit 97\n'
        '"$2" -m codeflux.cli.main --data-dir "$3" backup --output "$1/snapshot.sqlite3"\n'
        'code=$?\n'
        'ls -A "$1"\n'
        'exit $code\n'
    )
    result = subprocess.run(
        [unshare, "--mount", "sh", "-c", script, "sh", str(mountpoint), sys.executable,
         str(data_location.directory)],
        capture_output=True, text=True, env=_child_env(), timeout=120, check=False,
    )
    if result.returncode == 97 or "unshare failed" in result.stderr:
        pytest.skip(f"cannot mount a private tmpfs here: {result.stderr.strip()}")

    assert result.returncode == 1
    assert "is full" in result.stderr
    assert result.stdout.strip() == "", "the partial snapshot must be removed"


def test_backup_without_a_database_exits_3_with_the_fix_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "never-used"

    code, out, err = run_cli(capsys, "--data-dir", str(data_dir), "backup",
                             "--output", str(tmp_path / "snapshot.sqlite3"))

    assert code == 3
    assert out == ""
    assert "no codeflux database exists" in err and "codeflux migrate" in err
    assert str(data_dir) not in err
    assert not data_dir.exists()
    assert not (tmp_path / "snapshot.sqlite3").exists()


def test_backup_succeeds_while_another_connection_holds_a_read_transaction(
    db: Database, data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A running coordinator keeps readers open; an earlier system then failed its TRUNCATE checkpoint on
    # close and reported a snapshot it had already written as failed.
    seed_events(db, count=50, payload_bytes=100)

    def hold_read(view: ReadView) -> tuple[int, str, str]:
        return run_cli(capsys, "--data-dir", str(data_location.directory), "backup",
                       "--output", str(tmp_path / "snapshot.sqlite3"))

    code, out, err = db.read(hold_read)

    assert code == 0, err
    assert "wrote a consistent snapshot" in out
    assert (tmp_path / "snapshot.sqlite3").stat().st_size > 0


@pytest.mark.parametrize("argv", [["backup"], ["backup", "--output", ""], ["backup", "--output", "   "],
                                  ["backup", "--outptu", "x"]])
def test_backup_with_a_missing_or_empty_output_is_a_usage_error(
    data_location: DataLocation, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run_cli(capsys, "--data-dir", str(data_location.directory), *argv)

    assert code == 2
    assert "--output" in err
    assert out == ""


def test_backup_does_not_create_or_migrate_the_database(
    data_location: DataLocation, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_location.directory.mkdir()

    code, _, _ = run_cli(capsys, "--data-dir", str(data_location.directory), "backup",
                         "--output", str(tmp_path / "snapshot.sqlite3"))

    assert code == 3
    assert list(data_location.directory.iterdir()) == []
