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

from codeflux.coordinator.doctor import CheckResult, CheckStatus
from codeflux.domain.errors import CodefluxError
from codeflux.gitwork.leftovers import (
    Leftover,
    LeftoverKind,
    bundle_leftovers,
    find_leftovers,
    remove_leftovers,
    repository_here,
)
from codeflux.store.database import ReadView
from codeflux.store.inspection import readonly_database
from codeflux.store.location import DATABASE_FILENAME, DataLocation, ensure_data_directory
from codeflux.store.migrations import read_schema_version
from codeflux.store.repositories import list_repositories
from codeflux.store.task_cleanups import known_task_ids, unfinished_cleanups

__all__ = ["CleanResult", "RepositoryLeftovers", "check_leftovers", "clean_leftovers", "find_unknown_leftovers"]

_TASKS_SCHEMA_VERSION = 4
_CLEANUPS_SCHEMA_VERSION = 11  # the migration that added the cleanup journal
_MAX_SCANNED_REPOSITORIES = 20


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
            ensure_data_directory(location)  # 0700 when it was deleted; the bundles go in it
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            name = f"{found.root.name}-{task_id}-{stamp}.bundle"
            bundles.append(bundle_leftovers(found.root, items, location.directory / "bundles" / name))
    removed = remove_leftovers(found.root, found.unknown)
    kept = tuple(item for item in found.unknown if item not in removed)
    return CleanResult(bundles=tuple(bundles), removed=tuple(removed), kept=kept)


def _known_repositories(location: DataLocation) -> tuple[list[Path], int]:
    """The repositories the database knows (read-only) and how many cleanups it has without an end."""
    if not location.database.exists():
        return [], 0
    with readonly_database(location) as conn:
        version = read_schema_version(conn)
        if version < _TASKS_SCHEMA_VERSION:
            return [], 0
        view = ReadView(conn)
        roots = [row.root for row in list_repositories(view, limit=_MAX_SCANNED_REPOSITORIES)]
        return roots, len(unfinished_cleanups(view)) if version >= _CLEANUPS_SCHEMA_VERSION else 0


def check_leftovers(location: DataLocation) -> CheckResult:
    """Doctor's "codeflux leftovers" row: codeflux worktrees, task branches and refs no database knows, in the
    repository the command runs in and in every repository the database knows (read-only; `codeflux repo
    clean REPO` removes them), and cleanups of ended tasks that did not finish (the next task command's startup
    recovery finishes them)."""
    title = "codeflux leftovers"
    try:
        roots, unfinished = _known_repositories(location)
    except CodefluxError as err:
        return CheckResult(id="leftovers", title=title, status=CheckStatus.UNKNOWN,
                           summary=f"could not read the database ({err})",
                           remediation="run `codeflux integrity-check`; it explains what is wrong")
    here = repository_here()
    counts: dict[Path, int] = {}
    for root in ([here] if here is not None else []) + roots:
        try:
            found = find_unknown_leftovers(location, root)
        except CodefluxError:
            continue  # a repository that moved or broke is not a leftover question
        if found.unknown:
            counts[found.root] = len(found.unknown)
    if not counts and not unfinished:
        return CheckResult(id="leftovers", title=title, status=CheckStatus.OK, summary="none")
    parts = [f"{count} in {root} that no database knows" for root, count in counts.items()]
    if unfinished:
        parts.append(f"{unfinished} cleanup(s) of ended tasks did not finish")
    steps = []
    if counts:
        steps.append("`codeflux repo clean REPO` lists them; `--yes` removes them (unique commits bundled first)")
    if unfinished:
        steps.append("any `codeflux task` command finishes the interrupted cleanups")
    return CheckResult(id="leftovers", title=title, status=CheckStatus.DEGRADED, required=False,
                       summary="; ".join(parts), remediation="; ".join(steps))
