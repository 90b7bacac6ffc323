"""The scratch copy a watch tick runs its command in: the tree of one commit (the branch's HEAD), nothing else.

:func:`write_commit_scratch` removes ``<root>/<directory>`` and writes the commit's tracked files there through
the one tree walker (:mod:`codeflux.gitwork.tree_files`: no symbolic link is followed, submodules are left out),
bounded as the base-revision scratch is. No ``.git`` is written and nothing of the working tree is read, so the
person's uncommitted changes are never part of it. Refreshed per tick: whatever a command left there is gone at
the next one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pygit2

from codeflux.domain.errors import OperationFailedError
from codeflux.gitwork.base_scratch import MAX_SCRATCH_BYTES, MAX_SCRATCH_FILES
from codeflux.gitwork.checkout import map_git_errors, opened_checkout
from codeflux.gitwork.tree_files import TrackedEntry, TreeWriter, tracked_entries, write_entries

__all__ = ["remove_commit_scratch", "write_commit_scratch"]


class _Bounded(TreeWriter):
    def admit(self, entry: TrackedEntry) -> bool:
        if self.written + 1 > MAX_SCRATCH_FILES or self.bytes + entry.size > MAX_SCRATCH_BYTES:
            raise OperationFailedError("the commit is larger than the watch's scratch bound "
                                       f"({MAX_SCRATCH_FILES} files, {MAX_SCRATCH_BYTES // (1024 * 1024)} MiB)")
        return True


def remove_commit_scratch(target: Path) -> None:
    """Remove the scratch at ``target`` (a link is unlinked, never followed)."""
    if target.is_symlink():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target, ignore_errors=True)


def write_commit_scratch(repository_root: Path, commit: str, target: Path) -> int:
    """Write ``commit``'s tree of the repository at ``repository_root`` into ``target`` (removed first; its
    parent must exist); returns how many files were written."""
    remove_commit_scratch(target)
    target.mkdir(mode=0o755)
    writer = _Bounded(target, private=False)
    try:
        with opened_checkout(repository_root) as (repository, _), map_git_errors("read the watched commit"):
            found = repository[commit]
            if not isinstance(found, pygit2.Commit):
                raise OperationFailedError("the watched revision is not a commit")
            entries, complete = tracked_entries(repository, found.tree, limit=2 * MAX_SCRATCH_FILES)
            if not complete:
                raise OperationFailedError(f"the commit has more than {2 * MAX_SCRATCH_FILES} entries")
            write_entries(repository, entries, writer)
        writer.write_links()
    except BaseException:
        remove_commit_scratch(target)
        raise
    return writer.written
