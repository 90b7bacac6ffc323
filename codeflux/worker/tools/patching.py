"""``apply_patch``: a unified diff applied to the worktree, all files or none.

No ``git apply`` and no write by path. The diff is read by :mod:`~codeflux.worker.tools.unified_diff`;
every path it names (old and new sides, renames and copies) must pass :func:`resolve_worktree_path`
(so no ``.git``, ``..``, absolute path or symlink component), else ``patch-refused``, as is a binary
patch or a mode other than a regular file (symbolic link, submodule). Then every file's new content is
computed in memory (:mod:`~codeflux.worker.tools.hunks`: hunks placed by their content, wrong line
counts tolerated like ``git apply --recount``) from what the file holds now, read beneath the worktree
with ``O_NOFOLLOW``. Only when every section applies are the files written, through
:class:`~codeflux.worker.tools.file_changes.FileChanges`: directory descriptors opened without following
symlinks and kept open, atomic per-file writes, and all of it undone if any write fails. A symlink
swapped into the worktree while this runs can make the patch fail, never make it write outside.

Supported: edits, new files (parents created), deletions (emptied folders removed, as git does),
renames and copies with or without edits, and the executable bit (``new mode 100755``). A new file gets
the usual permissions (``0666``/``0777`` less the umask); an edited or renamed one keeps its own.
"""

from __future__ import annotations

from collections.abc import Mapping

from codeflux.domain.errors import PathNotFoundError, PathRefusedError, ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.domain.tools import BoundToolRequest
from codeflux.worker.paths import resolve_worktree_path
from codeflux.worker.tools.arguments import required_text
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.file_changes import FileChanges, FileState
from codeflux.worker.tools.hunks import apply_hunks
from codeflux.worker.tools.reading import READ_SIZE_FACTOR
from codeflux.worker.tools.results import ToolResult, succeeded_result
from codeflux.worker.tools.unified_diff import FilePatch, parse_unified_diff

__all__ = ["apply_patch"]

Parts = tuple[str, ...]


def apply_patch(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """Apply the unified diff in ``patch``; refused or failing patches change nothing."""
    sections = parse_unified_diff(required_text(request, "patch").encode("utf-8"))
    if not sections:
        raise ToolFailedError(failure_kind=FailureKind.PATCH_DOES_NOT_APPLY,
                              message="no file section found: give a unified diff ('--- a/path', '+++ b/path', "
                                      "'@@ -l,n +l,n @@' hunks)")
    named = sorted(set().union(*(section.paths() for section in sections)))
    parts = {path: _components(context, path) for path in named}
    limit = context.limits.max_file_bytes * READ_SIZE_FACTOR
    try:
        with FileChanges(context.worktree, max_bytes=limit) as changes:
            for section in sections:
                _stage_section(changes, section, parts, limit=limit)
            context.check_still_running()
            changes.commit()
    except PathNotFoundError:
        raise
    except PathRefusedError as refusal:
        raise ToolFailedError(failure_kind=FailureKind.PATCH_REFUSED,
                              message=f"the patch touches a refused path ({refusal.reason})") from None
    listing = "".join(f"{path}\n" for path in named)
    return succeeded_result(f"applied to {len(named)} paths", content=listing,
                            max_bytes=context.limits.max_output_bytes)


def _components(context: ToolContext, path: str) -> Parts:
    try:
        resolved = resolve_worktree_path(context.worktree, path, must_exist=False)
    except PathRefusedError as refusal:
        raise ToolFailedError(failure_kind=FailureKind.PATCH_REFUSED,
                              message=f"the patch touches a refused path ({refusal.reason})") from None
    return resolved.relative_to(context.worktree).parts


def _stage_section(changes: FileChanges, section: FilePatch, parts: Mapping[str, Parts], *, limit: int) -> None:
    """Compute what ``section`` leaves in its file(s) and stage it; raise before staging if it cannot apply."""
    old, new = section.old_path, section.new_path
    source = _source(changes, section, parts)
    if new is not None and new != old and changes.read(parts[new]) is not None:
        raise _does_not_apply(f"{new} already exists")
    data = apply_hunks(source.data if source else b"", section.hunks, path=old or new or "")
    if len(data) > limit:
        raise ToolFailedError(failure_kind=FailureKind.TOO_LARGE,
                              message=f"{new or old} would be {len(data)} bytes; the limit is {limit}")
    if old is not None and new != old and not section.copy:
        changes.stage(parts[old], None)  # deleted, or renamed away
    if new is None:
        if data:
            raise _does_not_apply(f"deleting {old} would leave lines the patch does not remove")
        return
    if source is None:  # a new file: the usual permissions, the umask applies
        executable = section.new_mode is not None and bool(section.new_mode & 0o111)
        changes.stage(parts[new], FileState(data=data, mode=0o777 if executable else 0o666), new_file_mode=True)
    else:
        changes.stage(parts[new], FileState(data=data, mode=_permission_bits(source.mode, section.new_mode)))


def _source(changes: FileChanges, section: FilePatch, parts: Mapping[str, Parts]) -> FileState | None:
    """What the section starts from: the old file, or None for a new one."""
    if section.old_path is None:
        if section.new_path is None:  # the parser never yields one; a section names at least one file
            raise _does_not_apply("a section names no file")
        if changes.read(parts[section.new_path]) is not None:
            raise _does_not_apply(f"{section.new_path} already exists")
        return None
    source = changes.read(parts[section.old_path])
    if source is None and not _creates_by_its_hunk(section):
        raise _does_not_apply(f"{section.old_path} does not exist")
    return source


def _creates_by_its_hunk(section: FilePatch) -> bool:
    """A plain section whose one hunk adds lines to nothing (``@@ -0,0 …``) creates its file, as in git."""
    return (not section.git and section.old_path == section.new_path and len(section.hunks) == 1
            and section.hunks[0].old_start == 0 and not section.hunks[0].preimage)


def _permission_bits(current: int, git_mode: int | None) -> int:
    """``current`` with the executable bits ``git_mode`` asks for (x wherever r is set), else unchanged."""
    if git_mode is None:
        return current
    if git_mode & 0o111:
        return current | ((current & 0o444) >> 2)
    return current & ~0o111


def _does_not_apply(reason: str) -> ToolFailedError:
    return ToolFailedError(failure_kind=FailureKind.PATCH_DOES_NOT_APPLY, message=f"nothing was changed: {reason}")
