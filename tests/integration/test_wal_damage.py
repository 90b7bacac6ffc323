"""A damaged write-ahead log in a real codeflux data directory, through the real CLI.

The data directory is a copy (database file and ``-wal``) taken while a connection with
``wal_autocheckpoint=0`` holds the original open, so the copy's log still holds recent commits — a task
created after a running one — as a crash would leave them. One byte of a frame in the middle is flipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import apsw

from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.ids import TaskId
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.wal import WAL_FRAME_HEADER_BYTES, WAL_HEADER_BYTES, validate_wal
from codeflux.store.wal_damage import check_wal_before_open
from tests.fixtures.cli import run_codeflux
from tests.fixtures.reviews import a_running_task_with_worktree
from tests.fixtures.tasks import a_draft, a_repository


@dataclass(frozen=True)
class Damaged:
    location: DataLocation
    running: TaskId
    frame: int
    lost_commits: int


def _damaged_copy(db: Database, data_location: DataLocation, tmp_path: Path) -> Damaged:
    tasks = TaskService(db, worktrees_root=data_location.worktrees)
    running = a_running_task_with_worktree(tasks, a_repository(tmp_path / "git"), {"pkg/new.py": "X = 1\n"})
    hold = apsw.Connection(str(data_location.database))
    try:
        hold.execute("PRAGMA wal_autocheckpoint = 0")
        hold.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the running task is in the main file now
        for n in range(3):  # later commits that live only in the log
            a_draft(tasks, a_repository(tmp_path / f"later-{n}"))
        copy = DataLocation(directory=tmp_path / "copy")
        copy.directory.mkdir(mode=0o700)
        shutil.copyfile(data_location.database, copy.database)
        wal = Path(f"{data_location.database}-wal").read_bytes()
    finally:
        hold.close()
    report = validate_wal(wal)
    assert report is not None and report.total_frames > 2 and not report.lost_committed_data
    frame = 2  # the second frame: every commit after it is in the log
    page_size = int.from_bytes(wal[8:12], "big")
    offset = WAL_HEADER_BYTES + (frame - 1) * (WAL_FRAME_HEADER_BYTES + page_size) + WAL_FRAME_HEADER_BYTES + 64
    damaged = bytearray(wal)
    damaged[offset] ^= 0x5A
    Path(f"{copy.database}-wal").write_bytes(bytes(damaged))
    after = validate_wal(bytes(damaged))
    assert after is not None and after.damaged_frame == frame and after.lost_commits > 0
    return Damaged(location=copy, running=running.task_id, frame=frame, lost_commits=after.lost_commits)


_HOLDER = """
import sys, apsw
conn = apsw.Connection(sys.argv[1], flags=apsw.SQLITE_OPEN_READONLY)
conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()
print("open", flush=True)
sys.stdin.read()
"""


def _copies(location: DataLocation) -> list[Path]:
    return sorted(location.backups.glob("wal-damage-*/*")) if location.backups.exists() else []


def test_integrity_check_names_the_frame_and_copies_the_log_before_opening(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    damaged = _damaged_copy(db, data_location, tmp_path)
    wal_before = Path(f"{damaged.location.database}-wal").read_bytes()

    run = run_codeflux("integrity-check", data_dir=damaged.location.directory)

    assert run.code == 1, (run.out, run.err)
    assert (f"[write-ahead-log] the write-ahead log is damaged at frame {damaged.frame}: committed data from "
            f"frame {damaged.frame} on was lost ({damaged.lost_commits} commits); a copy is at ") in run.out
    copies = _copies(damaged.location)
    assert [p.name for p in copies] == ["codeflux.sqlite3", "codeflux.sqlite3-wal"]
    assert copies[1].read_bytes() == wal_before
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in copies)
    assert str(copies[0].parent) in run.out

    again = run_codeflux("integrity-check", data_dir=damaged.location.directory)
    assert again.code == 1 and _copies(damaged.location) == copies  # the same log is copied once, never overwritten


def test_doctor_shows_the_damaged_log_as_failed(db: Database, data_location: DataLocation, tmp_path: Path) -> None:
    damaged = _damaged_copy(db, data_location, tmp_path)

    run = run_codeflux("doctor", "--json", "--port", "1", data_dir=damaged.location.directory)

    checks = {check["id"]: check for check in json.loads(run.out)["checks"]}
    row = checks["write-ahead-log"]
    assert row["status"] == "failed"
    assert f"damaged at frame {damaged.frame}" in str(row["summary"])
    assert "task recovery" in str(row["remediation"])
    assert run.code != 0
    assert len(_copies(damaged.location)) == 2


def test_task_recovery_after_the_damage_lists_the_running_task_as_ambiguous(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    damaged = _damaged_copy(db, data_location, tmp_path)

    run = run_codeflux("task", "recovery", data_dir=damaged.location.directory)

    assert run.code == 0, run.err
    assert f"task {damaged.running.value}" in run.out
    assert (f"database  store-damage  the database lost committed data from frame {damaged.frame} of its "
            "write-ahead log on ") in run.out
    assert "what this task did after that is unknown" in run.out
    assert "[unknown: inspect the worktree]" in run.out
    assert "recommended  reconcile: the database lost committed data, so what the task did since is unknown: " \
        "inspect the worktree" in run.out
    assert "nothing is unaccounted for" not in run.out
    assert "safe-resume     no: the database lost committed data" in run.out
    assert len(_copies(damaged.location)) == 2  # copied before the open discarded the log

    # the loss is recorded once, and stays visible to later commands (the log itself is gone now)
    later = run_codeflux("task", "recovery", data_dir=damaged.location.directory)
    assert f"from frame {damaged.frame} of its write-ahead log" in later.out
    events = run_codeflux("inspect", "events", "--limit", "500", data_dir=damaged.location.directory)
    assert events.out.count("store-damage-detected") == 1, events.out
    doctor = run_codeflux("doctor", "--json", "--port", "1", data_dir=damaged.location.directory)
    checks = {check["id"]: check for check in json.loads(doctor.out)["checks"]}
    assert checks["write-ahead-log"]["status"] == "ok"
    assert "recorded earlier: the write-ahead log is damaged at frame" in str(checks["write-ahead-log"]["summary"])
    assert damaged.running.value in str(checks["recovery"]["summary"])

    # acting on the task acknowledges the loss for it
    reconciled = run_codeflux("task", "recover", damaged.running.value, "--action", "reconcile",
                              data_dir=damaged.location.directory)
    assert reconciled.code == 0, reconciled.err
    assert damaged.running.value not in run_codeflux("task", "recovery", data_dir=damaged.location.directory).out
    assert os.path.isdir(damaged.location.backups)


def test_the_log_is_not_read_while_another_process_has_the_database_open(
    db: Database, data_location: DataLocation, tmp_path: Path
) -> None:
    """No replay happens then (the other process's wal-index is used), so a live coordinator's log is not
    read by every command; the positive control is the same check finding the damage once it has exited."""
    damaged = _damaged_copy(db, data_location, tmp_path)
    wal = Path(f"{damaged.location.database}-wal")
    evidence = wal.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(damaged.location.database)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        assert check_wal_before_open(damaged.location) is None
    finally:
        holder.communicate("", timeout=30)
    wal.write_bytes(evidence)  # a read-only connection leaves the log as it was; put it back to be sure
    found = check_wal_before_open(damaged.location)
    assert found is not None and found.report.damaged_frame == damaged.frame
