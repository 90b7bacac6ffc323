"""The paths a repository tracks at its HEAD: what makes a traceback frame "the repository's own".

Read straight from git's object store (:func:`~codeflux.gitwork.tree_files.tracked_entries`): nothing is checked
out and no program of the repository runs. Bounded: a repository with more paths than ``limit`` yields the first
``limit`` of them (a frame in a path beyond the bound is then not counted as the repository's own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pygit2

from codeflux.gitwork.checkout import map_git_errors, opened_checkout
from codeflux.gitwork.tree_files import tracked_entries

__all__ = ["MAX_TRACKED_PATHS", "tracked_paths_at_head"]

MAX_TRACKED_PATHS: Final = 200_000


def tracked_paths_at_head(root: Path, *, limit: int = MAX_TRACKED_PATHS) -> frozenset[str]:
    """Every path (posix, relative to the top level) tracked by the commit HEAD of the checkout at ``root``."""
    with opened_checkout(root) as (repository, _), map_git_errors("list the repository's files"):
        tree = repository.head.peel(pygit2.Commit).tree
        entries, _complete = tracked_entries(repository, tree, limit=limit)
    return frozenset(entry.path for entry, _ in entries)
