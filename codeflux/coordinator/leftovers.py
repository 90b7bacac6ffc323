"""Leftovers no database knows: codeflux's worktrees, task branches and refs in a repository whose task the
data directory's database does not hold — what deleting the data directory leaves behind.

:func:`find_unknown_leftovers` lists them (:mod:`codeflux.gitwork.leftovers` finds everything codeflux made;
a task this database holds is left to its own journaled cleanup, and a worktree under another data directory
whose database holds its task is left to that one). :func:`clean_leftovers` saves each task's commits that are
on no other branch as a verified git bundle under ``<data>/bundles/`` first, then removes. Nothing here
creates or changes the database; it is read only when it exists.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from codeflux.domain.errors import CodefluxError
from codeflux.gitwork.leftovers import Leftover, LeftoverKind, bundle_leftovers, find_leftovers, remove_leftovers
from codeflux.store.database import ReadView
from codeflux.store.inspection import readonly_database
from codeflux.store.location import DATABASE_FILENAME, DataLocation
from codeflux.store.migrations import read_schema_version
from codeflux.store.task_cleanups import known_task_ids

__all__ = ["CleanResult", "RepositoryLeftovers", "clean_leftovers", "find_unknown_leftovers"]

_TASKS_SCHEMA_VERSION = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryLeftovers:
    """``unknown``: what no database knows (``repo clean`` may remove it); ``known_elsewhere``: worktrees
    under another data directory whose database holds the task, with that directory."""

    root: Path
    unknown: tuple[Leftover, ...]
    known_elsewhere: tuple[tuple[Leftover, Path], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanResult:
    bundles: tuple[Path, ...]
    removed: tuple[Leftover, ...]
    kept: tuple[Leftover, ...]


def _task_ids_of(location: DataLocation) -> frozenset[str]:
    """The task ids ``location``'s database holds; empty when it has none (read-only, never created)."""
    if not location.database.exists():
        return frozenset()
    with readonly_database(location) as conn:
        if read_schema_version(conn) < _TASKS_SCHEMA_VERSION:
            return frozenset()
        return known_task_ids(ReadView(conn))


def _other_data_directory(item: Leftover, here: DataLocation) -> Path | None:
    """``<data>`` of a worktree at ``<data>/worktrees/<repo>/<task>`` whose database holds the task."""
    if item.path is None or len(item.path.parents) < 3:
        return None
    directory = item.path.parents[2]
    if directory.resolve() == here.directory.resolve() or not (directory / DATABASE_FILENAME).is_file():
        return None
    try:
        known = _task_ids_of(DataLocation(directory=directory))
    except CodefluxError:
        return directory  # a database is there but unreadable now: never take its worktree
    return directory if item.task_id in known else None


def find_unknown_leftovers(location: DataLocation, repo: Path) -> RepositoryLeftovers:
    """Every codeflux leftover in ``repo`` whose task neither this data directory's database nor (for a
    worktree) the database of the data directory holding it knows."""
    root, found = find_leftovers(repo)
    known = _task_ids_of(location)
    elsewhere: list[tuple[Leftover, Path]] = []
    owned_elsewhere: set[str] = set()
    for item in found:
        other = None if item.kind is not LeftoverKind.WORKTREE else _other_data_directory(item, location)
        if other is not None:
            elsewhere.append((item, other))
            owned_elsewhere.add(item.task_id)
    unknown = tuple(item for item in found if item.task_id not in known and item.task_id not in owned_elsewhere)
    return RepositoryLeftovers(root=root, unknown=unknown, known_elsewhere=tuple(elsewhere))


def clean_leftovers(location: DataLocation, found: RepositoryLeftovers) -> CleanResult:
    """Bundle each task's unique commits (verified) under ``<data>/bundles/``, then remove what was found.
    A task whose bundle fails keeps everything (the error propagates before anything of it is removed)."""
    by_task: dict[str, list[Leftover]] = {}
    for item in found.unknown:
        by_task.setdefault(item.task_id, []).append(item)
    bundles = []
    for task_id, items in by_task.items():
        if any(item.unique for item in items if item.kind is not LeftoverKind.WORKTREE):
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            name = f"{found.root.name}-{task_id}-{stamp}.bundle"
            bundles.append(bundle_leftovers(found.root, items, location.directory / "bundles" / name))
    removed = remove_leftovers(found.root, found.unknown)
    kept = tuple(item for item in found.unknown if item not in removed)
    return CleanResult(bundles=tuple(bundles), removed=tuple(removed), kept=kept)
