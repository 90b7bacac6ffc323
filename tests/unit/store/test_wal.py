"""The WAL reader against real write-ahead logs written by SQLite (apsw), checked against SQLite's own replay.

Every log is built by a connection with ``wal_autocheckpoint=0`` and copied (database file and ``-wal``)
while that connection is still open, so the copy holds the frames a crash would leave. Opening the copy
with SQLite (apsw, and the ``sqlite3`` command where it is installed) is the positive control: it shows
which commits a replay really keeps.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeflux.store.wal import WAL_FRAME_HEADER_BYTES, WAL_HEADER_BYTES, validate_wal, wal_checksum

ROWS = 12


@dataclass(frozen=True)
class BuiltWal:
    """A database whose table ``t`` is empty in the main file and gets one row per WAL commit."""

    database: bytes
    wal: bytes
    frames_after_commit: tuple[int, ...]
    """The WAL's frame count after each row's commit (row i is kept iff its commit frame is replayed)."""

    @property
    def frame_bytes(self) -> int:
        return WAL_FRAME_HEADER_BYTES + struct.unpack(">I", self.wal[8:12])[0]


def _frames(wal_path: Path, page_size: int) -> int:
    size = wal_path.stat().st_size if wal_path.exists() else 0
    return max(0, (size - WAL_HEADER_BYTES) // (WAL_FRAME_HEADER_BYTES + page_size))


def build_wal(directory: Path, *, rows: int = ROWS, page_size: int = 1024) -> BuiltWal:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "source.db"
    conn = apsw.Connection(str(path))
    try:
        conn.execute(f"PRAGMA page_size = {page_size}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, body BLOB)")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the table is in the main file; the WAL is empty
        counts = []
        for n in range(rows):
            conn.execute("INSERT INTO t VALUES (?, ?)", (n, bytes([n]) * 200))
            counts.append(_frames(Path(f"{path}-wal"), page_size))
        built = BuiltWal(database=path.read_bytes(), wal=Path(f"{path}-wal").read_bytes(),
                         frames_after_commit=tuple(counts))
    finally:
        conn.close()
    return built


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltWal:
    return build_wal(tmp_path_factory.mktemp("wal"))


def replayed_rows(directory: Path, database: bytes, wal: bytes) -> int | None:
    """How many rows SQLite keeps after replaying ``wal`` over ``database`` (None: it refuses to open)."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    (directory / "copy.db").write_bytes(database)
    (directory / "copy.db-wal").write_bytes(wal)
    try:
        conn = apsw.Connection(str(directory / "copy.db"))
        try:
            return int(conn.execute("SELECT count(*) FROM t").fetchall()[0][0])
        finally:
            conn.close()
    except apsw.Error:
        return None


def kept_rows(wal: BuiltWal, last_commit_frame: int) -> int:
    return sum(1 for frames in wal.frames_after_commit if frames <= last_commit_frame)


def flipped(data: bytes, offset: int, mask: int = 0xFF) -> bytes:
    changed = bytearray(data)
    changed[offset] ^= mask
    return bytes(changed)


def test_the_checksum_is_sqlites_own_for_the_header(built: BuiltWal) -> None:
    expected = struct.unpack(">II", built.wal[24:32])
    big_endian = built.wal[3] & 1 == 1
    assert wal_checksum(built.wal[:24], (0, 0), big_endian=big_endian) == expected


def test_every_frame_of_a_real_wal_validates(built: BuiltWal, tmp_path: Path) -> None:
    report = validate_wal(built.wal)
    assert report is not None
    assert report.total_frames == built.frames_after_commit[-1] > ROWS - 1
    assert report.valid_frames == report.last_commit_frame == report.total_frames
    assert report.damaged_frame is None and report.lost_commits == 0 and report.stale_frames == 0
    assert not report.header_damaged and not report.lost_committed_data
    assert replayed_rows(tmp_path / "open", built.database, built.wal) == ROWS


def test_a_flipped_byte_in_a_middle_frame_names_it_and_counts_the_lost_commits(built: BuiltWal,
                                                                                tmp_path: Path) -> None:
    middle = built.frames_after_commit[ROWS // 2 - 1] + 1  # the first frame of the commit after the middle one
    offset = WAL_HEADER_BYTES + (middle - 1) * built.frame_bytes + WAL_FRAME_HEADER_BYTES + 100
    damaged = flipped(built.wal, offset)

    report = validate_wal(damaged)

    assert report is not None
    assert report.damaged_frame == middle
    assert report.last_commit_frame == middle - 1
    assert report.lost_commits == ROWS - ROWS // 2
    assert f"damaged at frame {middle}" in report.describe()
    # the positive control: SQLite really drops those rows when it opens the damaged copy
    assert replayed_rows(tmp_path / "open", built.database, damaged) == ROWS // 2


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the sqlite3 command is not installed")
def test_the_sqlite3_command_loses_the_same_rows_and_deletes_the_log(built: BuiltWal, tmp_path: Path) -> None:
    middle = built.frames_after_commit[2] + 1
    damaged = flipped(built.wal, WAL_HEADER_BYTES + (middle - 1) * built.frame_bytes + WAL_FRAME_HEADER_BYTES + 7)
    (tmp_path / "copy.db").write_bytes(built.database)
    (tmp_path / "copy.db-wal").write_bytes(damaged)
    report = validate_wal(damaged)
    assert report is not None and report.damaged_frame == middle

    out = subprocess.run(["sqlite3", str(tmp_path / "copy.db"), "SELECT count(*) FROM t"],
                         capture_output=True, text=True, check=True, timeout=30)

    assert out.stdout.strip() == str(kept_rows(built, report.last_commit_frame)) == "3"
    assert not (tmp_path / "copy.db-wal").exists()  # the evidence is gone after the last connection closed


def test_a_damaged_header_makes_sqlite_ignore_the_whole_log(built: BuiltWal, tmp_path: Path) -> None:
    damaged = flipped(built.wal, 17)  # a byte of salt-1: the header's checksum no longer matches

    report = validate_wal(damaged)

    assert report is not None and report.header_damaged
    assert report.valid_frames == 0 and report.total_frames == built.frames_after_commit[-1]
    assert "header is damaged" in report.describe()
    assert replayed_rows(tmp_path / "open", built.database, damaged) == 0


def test_frames_of_an_earlier_generation_are_stale_not_lost(tmp_path: Path) -> None:
    path = tmp_path / "reset.db"
    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA page_size = 1024")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, body BLOB)")
        for n in range(20):
            conn.execute("INSERT INTO t VALUES (?, ?)", (n, b"x" * 600))
        conn.execute("PRAGMA wal_checkpoint(RESTART)")  # the next writer restarts the log with new salts
        conn.execute("INSERT INTO t VALUES (100, x'00')")
        database, wal = path.read_bytes(), Path(f"{path}-wal").read_bytes()
    finally:
        conn.close()

    report = validate_wal(wal)

    assert report is not None
    assert report.stale_frames > 0 and report.valid_frames >= 1
    assert report.valid_frames + report.stale_frames == report.total_frames
    assert report.damaged_frame is None and not report.lost_committed_data
    assert report.describe().startswith("stale frames only")
    assert replayed_rows(tmp_path / "open", database, wal) == 21


@pytest.mark.parametrize("salt_byte", [8, 15])
def test_a_damaged_salt_in_a_committed_frame_is_a_loss_not_a_stale_frame(built: BuiltWal, tmp_path: Path,
                                                                         salt_byte: int) -> None:
    """Found by the random-flip property below (position 0.942, mask 1): one bit of the last commit frame's salt
    flipped made the frame look like an earlier generation's ("stale"), while SQLite lost that commit. The salts
    are not in the checksum, so a frame whose checksum continues this generation's chain is ours, salt damaged."""
    last = built.frames_after_commit[-1]
    damaged = flipped(built.wal, WAL_HEADER_BYTES + (last - 1) * built.frame_bytes + salt_byte, mask=1)

    report = validate_wal(damaged)

    assert report is not None and report.stale_frames == 0
    assert report.damaged_frame == last and report.lost_commits == 1 and report.lost_committed_data
    assert replayed_rows(tmp_path / "salt", built.database, damaged) == ROWS - 1  # SQLite lost it too


def test_a_damaged_last_commit_is_a_loss_but_a_torn_frame_is_not(built: BuiltWal) -> None:
    last = built.frames_after_commit[-1]
    damaged = flipped(built.wal, WAL_HEADER_BYTES + (last - 1) * built.frame_bytes + WAL_FRAME_HEADER_BYTES + 1)
    report = validate_wal(damaged)
    assert report is not None and report.damaged_frame == last and report.lost_commits == 1
    torn = built.wal[: WAL_HEADER_BYTES + (last - 1) * built.frame_bytes + 10]  # a frame cut short: not counted
    cut = validate_wal(torn)
    assert cut is not None and not cut.lost_committed_data and cut.last_commit_frame == last - 1


def test_short_or_foreign_files_are_not_claimed() -> None:
    assert validate_wal(b"") is None and validate_wal(b"\0" * 31) is None
    foreign = validate_wal(b"\0" * 64)
    assert foreign is not None and foreign.unsupported and not foreign.lost_committed_data


@pytest.fixture(scope="module")
def replay_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("replays")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.floats(min_value=0.0, max_value=1.0, exclude_max=True), mask=st.integers(1, 255))
def test_a_random_flip_never_makes_the_validator_keep_more_than_sqlite(
    built: BuiltWal, replay_dirs: Path, position: float, mask: int
) -> None:
    offset = int(position * len(built.wal))
    damaged = flipped(built.wal, offset, mask)
    report = validate_wal(damaged)
    rows = replayed_rows(replay_dirs / "flip", built.database, damaged)
    assert report is not None
    if rows is None:  # SQLite refuses to open (a version it does not know): nothing is claimed either
        assert report.unsupported
        return
    predicted = 0 if report.unsupported or report.header_damaged else kept_rows(built, report.last_commit_frame)
    assert predicted <= rows
    assert predicted == rows, (offset, mask, report)
    if rows < ROWS and offset >= WAL_HEADER_BYTES:
        assert report.lost_committed_data or report.header_damaged
