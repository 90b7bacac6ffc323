"""WAL damage, checked before any connection opens the database, and recorded once it is open.

:func:`check_wal_before_open` reads ``<database>-wal`` (:mod:`codeflux.store.wal`) and, when a replay would
drop committed transactions, copies the damaged log and the database file as they are into
``<data>/backups/wal-damage-<sha256 of the log, 16 hex>/`` first (each file created with O_EXCL, 0600;
the same damaged log is copied once, whoever sees it first), because opening and closing the database then
checkpoints and deletes the log. :func:`record_wal_damage` appends one ``store-damage-detected`` event to
the system session per damaged log; :func:`recorded_store_damage` reads them back (recovery uses the newest).

SQLite replays the log only when the opening connection is the first (no other process holds the
``-shm`` file's "dead man switch" lock, byte 128); while another process has the database open its
wal-index is used as is and nothing is replayed. So the log is read only when no other process holds that
lock (read from ``/proc/locks``; where that file is missing, always): a running coordinator's live log is
never read by every command. A live writer may still be appending while it is read, so damage is only
reported when two reads one after the other agree on it.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from codeflux.domain.errors import StoreUnavailableError
from codeflux.domain.events import EventKind, StoreDamageDetected
from codeflux.domain.tasks import TERMINAL_TASK_STATES, Actor, TaskRecord
from codeflux.store.database import ReadView, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event, events_of_kind
from codeflux.store.location import DataLocation
from codeflux.store.task_records import transitions_of_task
from codeflux.store.wal import WalReport, validate_wal

__all__ = [
    "RecordedStoreDamage",
    "WalDamage",
    "check_wal_before_open",
    "record_wal_damage",
    "recorded_store_damage",
    "store_damage_of_task",
    "wal_path",
]

_COPY_CHUNK = 1 << 20
_MAX_RECORDS = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class WalDamage:
    """A WAL whose replay loses committed data, and where its copy was put."""

    report: WalReport
    wal_sha256: str
    copy: Path

    @property
    def finding(self) -> str:
        return f"{self.report.describe()}; a copy is at {self.copy}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedStoreDamage:
    """A ``store-damage-detected`` event as recorded: when, where in the log, how much, and the copy."""

    at_us: int
    frame: int | None
    lost_commits: int
    copy: str
    detail: str


def wal_path(location: DataLocation) -> Path:
    return Path(f"{location.database}-wal")


def _read_stable(path: Path) -> tuple[bytes, WalReport] | None:
    """The log's bytes and report, when two consecutive reads agree on the damage (or there is none)."""
    previous: bytes | None = None
    for _ in range(3):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        report = validate_wal(data)
        if report is None or not _is_loss(report):
            return None
        if previous is not None and previous == data:
            return data, report
        previous = data
    return None  # still changing under a live writer: not reported as damage now


_DMS_BYTE = 128  # SQLite's UNIX_SHM_DMS: every connection holds a shared lock on it while open


def _open_elsewhere(location: DataLocation) -> bool:
    """True when another process holds the database's ``-shm`` open-connection lock (so no replay happens
    on this open). Read from ``/proc/locks`` without opening the file: opening and closing it here would
    drop this process's own SQLite locks on it (POSIX lock semantics)."""
    try:
        shm = os.stat(f"{location.database}-shm")
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    inode_suffix = f":{shm.st_ino}"
    device = (os.major(shm.st_dev), os.minor(shm.st_dev))
    for line in table.splitlines():
        fields = line.split()
        if "->" in fields:  # a waiter, not a holder
            continue
        if len(fields) < 8 or fields[1] != "POSIX":
            continue
        try:
            pid, (major, minor, inode), start, end = int(fields[4]), fields[5].split(":"), fields[6], fields[7]
            if f":{inode}" != inode_suffix or (int(major, 16), int(minor, 16)) != device:
                continue
            covers = int(start) <= _DMS_BYTE and (end == "EOF" or int(end) >= _DMS_BYTE)
        except ValueError:
            continue
        if covers and pid != os.getpid():
            return True
    return False


def _is_loss(report: WalReport) -> bool:
    return not report.unsupported and report.lost_committed_data


def check_wal_before_open(location: DataLocation) -> WalDamage | None:
    """Validate the database's WAL before it is opened; copy a damaged one aside and describe the loss.

    None when there is no WAL, it is intact, or it holds only stale or uncommitted frames. When the copy
    cannot be made (a full disk, a read-only directory) StoreUnavailableError says so: opening the database
    then would discard the only evidence.
    """
    wal = wal_path(location)
    if not wal.exists() or _open_elsewhere(location):
        return None
    stable = _read_stable(wal)
    if stable is None:
        return None
    data, report = stable
    digest = hashlib.sha256(data).hexdigest()
    folder = location.backups / f"wal-damage-{digest[:16]}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        _write_once(folder / f"{location.database.name}-wal", data)
        _copy_once(location.database, folder / location.database.name)
    except OSError as err:
        raise StoreUnavailableError(
            f"{report.describe()}; it could not be copied aside to {folder} ({err.strerror or 'I/O error'}), "
            "so the database was not opened (opening it discards the log): free space or fix the data "
            "directory's permissions and try again"
        ) from err
    return WalDamage(report=report, wal_sha256=digest, copy=folder)


def _write_once(target: Path, data: bytes) -> None:
    """Create ``target`` (O_EXCL, 0600) holding ``data``; an existing file (an earlier copy) is left alone."""
    _create_once(target, iter((data,)))


def _copy_once(source: Path, target: Path) -> None:
    """Create ``target`` (O_EXCL, 0600) as a copy of ``source``, read in chunks; an existing one is left alone."""
    with source.open("rb") as src:
        _create_once(target, iter(lambda: src.read(_COPY_CHUNK), b""))


def _create_once(target: Path, chunks: Iterator[bytes]) -> None:
    """Create ``target`` exclusively (0600), write ``chunks`` and fsync; a file already there is left alone,
    and a write cut off part-way removes what it created."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            target.unlink()
        raise


def record_wal_damage(tx: Transaction, damage: WalDamage) -> bool:
    """Append the ``store-damage-detected`` event for ``damage`` unless this log was recorded already."""
    for event in events_of_kind(tx, session_id=SYSTEM_SESSION_ID, kind=EventKind.STORE_DAMAGE_DETECTED.value,
                                limit=_MAX_RECORDS):
        if isinstance(event.event, StoreDamageDetected) and event.event.wal_sha256 == damage.wal_sha256:
            return False
    append_event(tx, session_id=SYSTEM_SESSION_ID, event=StoreDamageDetected(
        frame=damage.report.damaged_frame, lost_commits=damage.report.lost_commits, copy=str(damage.copy),
        wal_sha256=damage.wal_sha256, detail=damage.report.describe()))
    return True


def recorded_store_damage(view: ReadView) -> list[RecordedStoreDamage]:
    """Every recorded ``store-damage-detected`` event, oldest first (at most the newest 100)."""
    found = []
    for event in events_of_kind(view, session_id=SYSTEM_SESSION_ID, kind=EventKind.STORE_DAMAGE_DETECTED.value,
                                limit=_MAX_RECORDS):
        if isinstance(event.event, StoreDamageDetected):
            payload = event.event
            found.append(RecordedStoreDamage(at_us=event.created_at_us, frame=payload.frame,
                                             lost_commits=payload.lost_commits, copy=payload.copy,
                                             detail=payload.detail))
    return found


def store_damage_of_task(view: ReadView, task: TaskRecord) -> str | None:
    """The ambiguity a recorded loss of committed data leaves on ``task``, or None.

    A task is affected when it is open (not terminal) and the person has not changed its state since the
    newest ``store-damage-detected`` event: its rows after the damaged frame may be gone, so what it did
    after that is unknown. Acting on the task (reconcile, abandon, pause, …) acknowledges it.
    """
    if task.state in TERMINAL_TASK_STATES:
        return None
    recorded = recorded_store_damage(view)
    if not recorded:
        return None
    newest = recorded[-1]
    if any(t.actor is Actor.USER and t.at_us > newest.at_us for t in transitions_of_task(view, task.task_id)):
        return None
    when = datetime.datetime.fromtimestamp(newest.at_us // 1_000_000, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    where = "in its write-ahead log" if newest.frame is None else f"from frame {newest.frame} of its write-ahead log"
    return (f"the database lost committed data {where} on {when} ({newest.lost_commits} commits; a copy of the "
            f"damaged log is at {newest.copy}); what this task did after that is unknown")
