"""What every phase B stage is handed (:class:`AtomFacts`), in a module of its own: the stage modules import it,
and :mod:`~codeflux.pipeline.phase_b`, which lists the stages, imports them — so no stage imports phase_b."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from codeflux.pipeline.atoms import DiffAtoms
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult

__all__ = ["AtomFacts", "worktree_text"]

T = TypeVar("T")


class _Guards:
    """One lock per key of :attr:`AtomFacts.shared`: the stages of a batch may run side by side
    (:mod:`~codeflux.pipeline.concurrency`), and what one measures for all is measured once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def of(self, key: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(key, threading.Lock())


@dataclass(frozen=True, slots=True, kw_only=True)
class AtomFacts:
    """The ports, the attempt, the diff's atoms and assembly's result."""

    ports: PipelinePorts
    attempt: int
    diff: DiffAtoms
    assembly: StageResult
    shared: MutableMapping[str, object] = field(default_factory=dict, compare=False)
    """What one stage measured for the next ones of the same attempt (the coverage map:
    :func:`~codeflux.pipeline.atom_coverage.atom_coverage`, so the tests run under coverage once; the interpreter's
    tool probe: :func:`~codeflux.pipeline.tool_overlay.resolve_tools`) — written through :meth:`once`."""
    guards: _Guards = field(default_factory=_Guards, compare=False, repr=False)
    whole_suite: str | None = None
    """Why this attempt's coverage run may not select tests from memory (set on the facts a gate is judged again
    with after it failed under a selected run: :func:`~codeflux.pipeline.atom_coverage.whole_suite_facts`)."""

    def once(self, key: str, kind: type[T], measure: Callable[[], T]) -> T:
        """``shared[key]`` when it holds a ``kind``, else what ``measure`` returns, kept there: measured by one
        caller while any other asking for the same key waits for it."""
        with self.guards.of(key):
            cached = self.shared.get(key)
            if isinstance(cached, kind):
                return cached
            found = measure()
            self.shared[key] = found
            return found

    def for_whole_suite(self, why: str) -> AtomFacts:
        """These facts with nothing measured yet and a coverage run that may not select tests (``why``)."""
        return replace(self, shared={}, guards=_Guards(), whole_suite=why)

    @property
    def changed_paths(self) -> tuple[str, ...]:
        """Every path the diff adds, changes or removes (assembly's ``files``), sorted: what a scratch copy of the
        final tree lays over the base."""
        files = self.assembly.evidence.get("files")
        items = [item for item in files if isinstance(item, Mapping)] if isinstance(files, list) else []
        return tuple(sorted({str(item.get("path", "")) for item in items}))

    @property
    def diff_identity(self) -> str | None:
        identity = self.assembly.evidence.get("diff_identity")
        return identity if isinstance(identity, str) else None


def worktree_text(path: Path) -> str | None:
    """The text of a regular UTF-8 file of the worktree — never read through a link — or None."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
