"""The executable digest cache: a settled, unchanged file is hashed once; any change is hashed again."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from codeflux.worker.tools.executables import SETTLE_NS, ExecutableDigests


def digest_of(cache: ExecutableDigests, path: Path) -> str:
    with path.open("rb") as handle:
        return cache.sha256_of(str(path), handle, os.fstat(handle.fileno()))


def settled_program(tmp_path: Path, content: bytes = b"#!/bin/sh\necho one\n") -> Path:
    program = tmp_path / "tool.sh"
    program.write_bytes(content)
    return program


def later_clock() -> int:
    """A wall clock far enough ahead that every file written by the test counts as settled."""
    return time.time_ns() + 10 * SETTLE_NS


def test_a_settled_unchanged_file_is_served_from_the_cache(tmp_path: Path) -> None:
    program = settled_program(tmp_path)
    cache = ExecutableDigests(clock=later_clock)
    assert digest_of(cache, program) == hashlib.sha256(program.read_bytes()).hexdigest()
    assert cache.is_cached(str(program), os.stat(program))


def test_a_file_changed_in_place_is_hashed_again(tmp_path: Path) -> None:
    program = settled_program(tmp_path)
    cache = ExecutableDigests(clock=later_clock)
    digest_of(cache, program)
    # Past one tick of the kernel's coarse file clock (the fake clock above already treats the first
    # write as settled), so the rewrite gets a new ctime: same size, same inode, only timestamps move.
    time.sleep(0.05)
    program.write_bytes(b"#!/bin/sh\necho two\n")
    assert digest_of(cache, program) == hashlib.sha256(b"#!/bin/sh\necho two\n").hexdigest()


def test_a_file_swapped_by_rename_is_hashed_again(tmp_path: Path) -> None:
    program = settled_program(tmp_path)
    cache = ExecutableDigests(clock=later_clock)
    digest_of(cache, program)
    replacement = tmp_path / "other"
    replacement.write_bytes(b"#!/bin/sh\necho one\n")
    before = os.stat(replacement)
    os.utime(replacement, ns=(before.st_atime_ns, os.stat(program).st_mtime_ns))  # even with the old mtime
    os.replace(replacement, program)
    assert not cache.is_cached(str(program), os.stat(program))


def test_a_file_changed_within_the_settle_window_is_never_cached(tmp_path: Path) -> None:
    # Timestamps are coarse: a second write in the same tick would leave the same facts, so a file
    # younger than the settle window is hashed on every use.
    program = settled_program(tmp_path)
    cache = ExecutableDigests()
    assert digest_of(cache, program) == hashlib.sha256(program.read_bytes()).hexdigest()
    assert not cache.is_cached(str(program), os.stat(program))


def test_a_cache_of_capacity_zero_keeps_nothing(tmp_path: Path) -> None:
    program = settled_program(tmp_path)
    cache = ExecutableDigests(capacity=0, clock=later_clock)
    digest_of(cache, program)
    assert not cache.is_cached(str(program), os.stat(program))


def test_the_same_file_under_another_path_is_its_own_entry(tmp_path: Path) -> None:
    program = settled_program(tmp_path)
    alias = tmp_path / "alias"
    os.link(program, alias)
    cache = ExecutableDigests(clock=later_clock)
    digest_of(cache, program)
    assert not cache.is_cached(str(alias), os.stat(alias))
