"""``apply_patch``: a unified diff applied to the worktree, all files or none.

Applied by ``git apply`` (through :func:`~codeflux.worker.tools.git.run_git`: hooks off, scrubbed
environment, never ``--unsafe-paths``), which is atomic — if any hunk fails, nothing is written — and
itself refuses paths outside the working tree and paths beyond a symlink. Before git sees it:

- every path the patch names — in its headers (``---``/``+++``, ``rename``/``copy from``/``to``) *and*
  as git parses it (``git apply --numstat``) — must pass :func:`resolve_worktree_path` (so no ``.git``,
  ``..``, absolute path or symlink component), else ``patch-refused``;
- a patch that would create a symbolic link or a submodule (mode ``120000``/``160000``) is refused.

A patch whose hunk headers carry wrong line counts (models often get them wrong) is retried with
``--recount`` when it does not apply as written.
"""

from __future__ import annotations

import re
from typing import Final

from codeflux.domain.errors import PathRefusedError, ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.domain.tools import BoundToolRequest
from codeflux.worker.paths import resolve_worktree_path
from codeflux.worker.tools.arguments import required_text
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.git import run_git
from codeflux.worker.tools.results import ToolResult, succeeded_result

__all__ = ["apply_patch", "paths_named_by_patch"]

_SPECIAL_MODE = re.compile(r"^(?:new file mode|new mode|old mode|deleted file mode|index \S+)\s+(?:120000|160000)\s*$",
                           re.MULTILINE)
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_RENAME_PREFIXES: Final = ("rename from ", "rename to ", "copy from ", "copy to ")
_ESCAPES: Final = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def apply_patch(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """Apply the unified diff in ``patch``; refused or failing patches change nothing."""
    patch = required_text(request, "patch")
    if _SPECIAL_MODE.search(patch):
        raise ToolFailedError(failure_kind=FailureKind.PATCH_REFUSED,
                              message="the patch would create a symbolic link or a submodule")
    _refuse_paths(context, paths_named_by_patch(patch))
    data = patch.encode("utf-8")
    mode = _applicable_mode(context, data)
    parsed = run_git(context, ["apply", "--numstat", "-z", *mode, "-"], stdin=data)
    if parsed.returncode != 0:
        raise ToolFailedError(failure_kind=FailureKind.PATCH_DOES_NOT_APPLY, message=parsed.first_error_line())
    paths = paths_named_by_patch(patch) | _numstat_paths(parsed.stdout)
    if not paths:
        raise ToolFailedError(failure_kind=FailureKind.PATCH_DOES_NOT_APPLY, message="the patch changes no file")
    _refuse_paths(context, paths)
    applied = run_git(context, ["apply", *mode, "--whitespace=nowarn", "-"], stdin=data)
    if applied.returncode != 0:
        raise ToolFailedError(failure_kind=FailureKind.PATCH_DOES_NOT_APPLY,
                              message=f"nothing was changed: {applied.first_error_line()}")
    listing = "".join(f"{path}\n" for path in sorted(paths))
    return succeeded_result(f"applied to {len(paths)} paths", content=listing,
                            max_bytes=context.limits.max_output_bytes)


def _refuse_paths(context: ToolContext, paths: set[str]) -> None:
    for path in sorted(paths):
        try:
            resolve_worktree_path(context.worktree, path, must_exist=False)
        except PathRefusedError as refusal:
            raise ToolFailedError(failure_kind=FailureKind.PATCH_REFUSED,
                                  message=f"the patch touches a refused path ({refusal.reason})") from None


def _applicable_mode(context: ToolContext, data: bytes) -> tuple[str, ...]:
    """``()`` if the patch applies as written, ``("--recount",)`` if only with recounted hunks.

    ``--recount`` is a fallback, not the default: with it, a ``--- a/next-file`` header that follows a
    hunk without a ``diff --git`` line is read as a removed line of that hunk.
    """
    first = run_git(context, ["apply", "--check", "-"], stdin=data)
    if first.returncode == 0:
        return ()
    if run_git(context, ["apply", "--check", "--recount", "-"], stdin=data).returncode == 0:
        return ("--recount",)
    raise ToolFailedError(failure_kind=FailureKind.PATCH_DOES_NOT_APPLY,
                          message=f"nothing was changed: {first.first_error_line()}")


def paths_named_by_patch(patch: str) -> set[str]:
    """Worktree-relative paths in the patch's headers (``a/``/``b/`` stripped, C-quoting undone).

    A ``---``/``+++`` pair counts only when a ``@@`` hunk header follows it, so a removed line that
    happens to start with ``-- `` inside a hunk is not mistaken for a file name.
    """
    lines = patch.splitlines()
    found: set[str] = set()
    for index, line in enumerate(lines):
        if line.startswith(_RENAME_PREFIXES):
            found.add(_header_path(line.split(" ", 2)[2], strip_prefix=False))
        elif (line.startswith("--- ") and index + 2 < len(lines) and lines[index + 1].startswith("+++ ")
              and lines[index + 2].startswith("@@")):
            found.add(_header_path(line[4:], strip_prefix=True))
            found.add(_header_path(lines[index + 1][4:], strip_prefix=True))
    found.discard("/dev/null")
    return found


def _header_path(text: str, *, strip_prefix: bool) -> str:
    quoted = _QUOTED.match(text)
    raw = _unquote(quoted.group(0)) if quoted else text.split("\t", 1)[0].rstrip("\r")
    if strip_prefix and raw[:2] in {"a/", "b/"}:
        raw = raw[2:]
    return raw


def _numstat_paths(output: str) -> set[str]:
    # Records are "added\tdeleted\tpath\0", or "added\tdeleted\t\0source\0destination\0" for renames.
    found: set[str] = set()
    tokens = output.split("\x00")
    index = 0
    while index < len(tokens):
        fields = tokens[index].split("\t", 2)
        index += 1
        if len(fields) != 3:
            continue
        if fields[2]:
            found.add(fields[2])
        else:
            found.update(token for token in tokens[index : index + 2] if token)
            index += 2
    return found


def _unquote(text: str) -> str:
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    body = text[1:-1]
    out = bytearray()
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\" or index + 1 >= len(body):
            out += char.encode("utf-8")
            index += 1
            continue
        following = body[index + 1]
        if following in _ESCAPES:
            out.append(_ESCAPES[following])
            index += 2
        elif body[index + 1 : index + 4].isdigit():
            out.append(int(body[index + 1 : index + 4], 8) & 0xFF)
            index += 4
        else:
            out += following.encode("utf-8")
            index += 2
    return out.decode("utf-8", errors="replace")
