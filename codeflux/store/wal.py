"""Read and validate a SQLite write-ahead log (``-wal`` file) the way SQLite's recovery does — without SQLite.

SQLite replays a WAL when the first connection opens the database: it walks the frames from the first
and stops at the first one that does not decode (salts differ from the header's, page number 0, or the
cumulative checksum fails); only frames up to the last *commit* frame before that point count. Committed
transactions in frames after a damaged one are dropped silently — and closing the last connection then
checkpoints and deletes the WAL, destroying the evidence. This module reads the file first and says
what a replay would keep and what it would lose.

Format (https://www.sqlite.org/fileformat2.html#walformat), all integers big-endian:

* header, 32 bytes: magic (0x377f0682: checksum words little-endian, 0x377f0683: big-endian), version
  3007000, page size, checkpoint sequence, salt-1, salt-2, checksum-1, checksum-2 over the first 24 bytes;
* each frame: a 24-byte header (page number, database size after commit — nonzero on a commit frame —,
  salt-1, salt-2, checksum-1, checksum-2) then one page. The checksum is cumulative: seeded with the
  previous frame's (the header's for the first frame), over the frame header's first 8 bytes then the page.

Frames whose salts differ from the header's are **stale**: left over from an earlier generation of the log
after a reset (a checkpoint restarted it), never part of the current one — not a loss. A frame carrying the
header's salts that fails, followed by a commit frame with the header's salts, is damage: those commits
are lost. A header that fails its own checksum makes SQLite ignore the whole file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "WAL_FRAME_HEADER_BYTES",
    "WAL_HEADER_BYTES",
    "WalReport",
    "read_wal",
    "validate_wal",
    "wal_checksum",
]

WAL_HEADER_BYTES = 32
WAL_FRAME_HEADER_BYTES = 24
_MAGIC_LITTLE = 0x377F0682
_MAGIC_BIG = 0x377F0683
_VERSION = 3007000
_MASK = 0xFFFFFFFF


def wal_checksum(data: bytes, seed: tuple[int, int], *, big_endian: bool) -> tuple[int, int]:
    """SQLite's WAL checksum of ``data`` (a multiple of 8 bytes), continuing from ``seed``.

    For each pair of 32-bit words x0, x1: s0 += x0 + s1; s1 += x1 + s0 (mod 2**32).
    """
    if len(data) % 8:
        raise ValueError("the WAL checksum runs over a multiple of 8 bytes")
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 4}I", data)
    s0, s1 = seed
    for index in range(0, len(words), 2):
        s0 = (s0 + words[index] + s1) & _MASK
        s1 = (s1 + words[index + 1] + s0) & _MASK
    return s0, s1


@dataclass(frozen=True, slots=True, kw_only=True)
class WalReport:
    """What SQLite's replay of this WAL keeps and loses (frame numbers start at 1).

    ``valid_frames``: frames a replay keeps (through the last intact commit frame). ``last_commit_frame``:
    that frame's number (0: none). ``stale_frames``: frames carrying other salts (an older generation).
    ``damaged_frame``: the first frame with the header's salts that fails to decode where a replay stops,
    or None. ``lost_commits``: commit frames with the header's salts at or after ``damaged_frame`` — the
    committed transactions a replay drops. ``header_damaged``: the header fails its checksum (or names an
    impossible page size), so SQLite ignores the whole file; ``lost_commits`` then counts the commit frames
    it held. ``unsupported``: the file is not a WAL this reader knows (wrong magic or version); nothing is
    claimed about it.
    """

    total_frames: int
    valid_frames: int
    last_commit_frame: int
    stale_frames: int
    damaged_frame: int | None
    lost_commits: int
    header_damaged: bool
    unsupported: bool = False
    page_size: int = 0

    @property
    def lost_committed_data(self) -> bool:
        return self.lost_commits > 0

    def describe(self) -> str:
        """One line saying what was lost (or that nothing was)."""
        if self.unsupported:
            return "the write-ahead log is not in a format this codeflux can read; nothing was checked"
        if self.header_damaged:
            if self.lost_commits:
                return (f"the write-ahead log's header is damaged, so SQLite ignores the whole log: committed data "
                        f"in {self.total_frames} frames was lost ({self.lost_commits} commits)")
            return "the write-ahead log's header is damaged, but it held no committed data: nothing lost"
        if self.damaged_frame is not None and self.lost_commits:
            return (f"the write-ahead log is damaged at frame {self.damaged_frame}: committed data from frame "
                    f"{self.damaged_frame} on was lost ({self.lost_commits} commits)")
        if self.stale_frames:
            return f"stale frames only ({self.stale_frames} from an earlier log generation): nothing lost"
        return f"the write-ahead log is intact ({self.valid_frames} frames through commit {self.last_commit_frame})"


def read_wal(path: Path) -> WalReport | None:
    """Validate the WAL at ``path``; None when there is no WAL file or it is shorter than a header."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return validate_wal(data)


def _valid_page_size(size: int) -> bool:
    return 512 <= size <= 65536 and size & (size - 1) == 0


def validate_wal(data: bytes) -> WalReport | None:
    """Validate the WAL bytes ``data`` as SQLite's recovery would read them (see :class:`WalReport`)."""
    if len(data) < WAL_HEADER_BYTES:
        return None
    magic, version, page_size, _seq, _salt1, _salt2, check1, check2 = struct.unpack(">8I", data[:WAL_HEADER_BYTES])
    if magic not in (_MAGIC_LITTLE, _MAGIC_BIG) or version != _VERSION:
        return WalReport(total_frames=0, valid_frames=0, last_commit_frame=0, stale_frames=0, damaged_frame=None,
                         lost_commits=0, header_damaged=False, unsupported=True)
    big_endian = bool(magic & 1)
    header_ok = _valid_page_size(page_size) and wal_checksum(
        data[:24], (0, 0), big_endian=big_endian) == (check1, check2)
    if not _valid_page_size(page_size):
        # Frames cannot even be delimited: the whole file is ignored; say it held data if it has any bytes.
        held = len(data) > WAL_HEADER_BYTES
        return WalReport(total_frames=0, valid_frames=0, last_commit_frame=0, stale_frames=0, damaged_frame=None,
                         lost_commits=1 if held else 0, header_damaged=True)
    frame_bytes = WAL_FRAME_HEADER_BYTES + page_size
    total = (len(data) - WAL_HEADER_BYTES) // frame_bytes
    salts = data[16:24]
    seed = (check1, check2)
    valid = last_commit = stale = lost = 0
    stopped: int | None = None
    for number in range(1, total + 1):
        start = WAL_HEADER_BYTES + (number - 1) * frame_bytes
        frame = data[start:start + frame_bytes]
        page_number, commit_size = struct.unpack(">II", frame[:8])
        ours = frame[8:16] == salts
        if stopped is None and header_ok:
            checksum = wal_checksum(frame[:8] + frame[WAL_FRAME_HEADER_BYTES:], seed, big_endian=big_endian)
            chained = page_number != 0 and checksum == struct.unpack(">II", frame[16:24])
            if ours and chained:
                seed = checksum
                if commit_size:
                    last_commit = valid = number
                continue
            stopped = number
            # The salts are not part of the checksum: a frame of an older generation cannot continue this chain
            # (its checksums were seeded by another one), so a frame that does, with other salts, is one of ours
            # whose salt bytes were damaged — SQLite stops there, and what it committed is lost, not stale.
            ours = ours or chained
        if not ours:
            stale += 1
        elif commit_size:
            lost += 1
    if not header_ok:
        return WalReport(total_frames=total, valid_frames=0, last_commit_frame=0, stale_frames=stale,
                         damaged_frame=None, lost_commits=lost, header_damaged=True, page_size=page_size)
    # A replay stopping at a frame with other salts is the normal end of the current generation; only a stop
    # followed by commits of this generation is damage (the stop itself may be the salts being damaged).
    damaged = stopped if lost else None
    return WalReport(total_frames=total, valid_frames=valid, last_commit_frame=last_commit, stale_frames=stale,
                     damaged_frame=damaged, lost_commits=lost, header_damaged=False, page_size=page_size)
