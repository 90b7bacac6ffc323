"""The one symlink-safe resolver for every worktree path a tool (or the classifier) is given.

A path a model supplies is *text relative to the task worktree*. :func:`resolve_worktree_path` accepts
it only in canonical form — non-empty, relative, ``/``-separated, no empty, ``.`` or ``..`` component —
and refuses, with :class:`~codeflux.domain.errors.PathRefusedError` (``failure_kind`` ``path-refused``):

- absolute paths, ``~`` (home expansion), drive letters (``C:``), backslashes (``..\\x`` is a traversal
  on Windows and an odd file name here: refused either way), NUL and other control characters;
- any ``.git`` component in any letter case (``.GIT``, ``sub/.Git/config``; also with trailing dots),
  so hooks and config of the repository can never be written through a tool;
- leading or trailing whitespace in a component, over-long paths (4096 bytes) and components (255);
- any existing component that is a symbolic link — a file or a directory, pointing inside the worktree
  or out: ``lstat`` is called on every existing component and nothing is ever followed.

The result is an absolute path under the worktree's real path. With ``must_exist=True`` a missing
target raises :class:`~codeflux.domain.errors.PathNotFoundError` (``failure_kind`` ``not-found``).

The resolver only calls ``lstat`` (and ``realpath`` on the worktree itself); it creates nothing, so the
coordinator can use it to compute classification facts. Tools that then open the path do so beneath a
directory file descriptor with ``O_NOFOLLOW`` (``tools/beneath.py``), so a symlink planted between
resolution and use is refused too.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import Final

from codeflux.domain.errors import PathNotFoundError, PathRefusedError

__all__ = [
    "MAX_COMPONENT_BYTES",
    "MAX_PATH_BYTES",
    "check_worktree_present",
    "resolve_worktree_path",
    "resolve_worktree_root",
    "worktree_components",
]

MAX_PATH_BYTES: Final = 4096
MAX_COMPONENT_BYTES: Final = 255

_DRIVE = re.compile(r"[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def resolve_worktree_path(worktree: Path, relative: str, *, must_exist: bool) -> Path:
    """The absolute path ``relative`` names inside ``worktree``; refused unless it is plainly inside.

    ``worktree`` must be an absolute path to an existing directory. Raises
    :class:`PathRefusedError` for every form listed in the module docstring and
    :class:`PathNotFoundError` when ``must_exist`` and the target (or the worktree) does not exist.
    """
    root = resolve_worktree_root(worktree)
    parts = worktree_components(relative)
    current = root
    exists = True
    for index, part in enumerate(parts):
        current = current / part
        if not exists:
            continue
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            exists = False
            continue
        except NotADirectoryError:
            raise PathRefusedError(reason="a parent component is not a directory") from None
        except OSError as error:
            raise PathRefusedError(reason=f"cannot be inspected ({_errno_name(error)})") from None
        if stat.S_ISLNK(info.st_mode):
            raise PathRefusedError(reason="passes through a symbolic link")
        is_last = index == len(parts) - 1
        if not is_last and not stat.S_ISDIR(info.st_mode):
            raise PathRefusedError(reason="a parent component is not a directory")
    if must_exist and not exists:
        raise PathNotFoundError()
    # By construction (no '..', no symlinks) the result is below the root; checked anyway.
    if not current.is_relative_to(root) or current == root:
        raise PathRefusedError(reason="does not stay inside the worktree")
    return current


def worktree_components(relative: str) -> tuple[str, ...]:
    """The components of a canonical worktree-relative path; :class:`PathRefusedError` otherwise.

    Purely lexical (no I/O): the checks of :func:`resolve_worktree_path` that need no file system.
    """
    if not isinstance(relative, str):
        raise PathRefusedError(reason="must be text")
    if "\x00" in relative:
        raise PathRefusedError(reason="contains a NUL byte")
    if relative.strip() == "":
        raise PathRefusedError(reason="is empty; omit the path to mean the worktree root")
    if _CONTROL.search(relative):
        raise PathRefusedError(reason="contains a control character")
    try:
        size = len(relative.encode("utf-8"))
    except UnicodeEncodeError:
        raise PathRefusedError(reason="is not valid Unicode text") from None
    if size > MAX_PATH_BYTES:
        raise PathRefusedError(reason=f"is longer than {MAX_PATH_BYTES} bytes")
    if "\\" in relative:
        raise PathRefusedError(reason="contains a backslash; use '/' between components")
    if relative.startswith("/"):
        raise PathRefusedError(reason="is absolute; give a path relative to the worktree")
    if relative.startswith("~"):
        raise PathRefusedError(reason="starts with '~'; give a path relative to the worktree")
    if _DRIVE.match(relative):
        raise PathRefusedError(reason="starts with a drive letter")
    parts = tuple(relative.split("/"))
    for part in parts:
        _check_component(part)
    return parts


def _check_component(part: str) -> None:
    if part == "":
        raise PathRefusedError(reason="has an empty component ('//' or a trailing '/')")
    if part == "..":
        raise PathRefusedError(reason="contains a '..' component")
    if part == ".":
        raise PathRefusedError(reason="contains a '.' component; omit the path to mean the worktree root")
    if part != part.strip():
        raise PathRefusedError(reason="has a component with leading or trailing whitespace")
    if part.rstrip(". ").lower() == ".git":
        raise PathRefusedError(reason="enters .git; repository metadata is never a tool target")
    if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
        raise PathRefusedError(reason=f"has a component longer than {MAX_COMPONENT_BYTES} bytes")


def resolve_worktree_root(worktree: Path) -> Path:
    """The real path of the worktree directory; refused if relative, missing or not a directory."""
    if not worktree.is_absolute():
        raise PathRefusedError(reason="the worktree path must be absolute")
    root = Path(os.path.realpath(worktree))
    try:
        info = os.stat(root)
    except FileNotFoundError:
        raise PathNotFoundError(reason="the task worktree does not exist") from None
    except OSError as error:
        raise PathRefusedError(reason=f"the task worktree cannot be inspected ({_errno_name(error)})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise PathNotFoundError(reason="the task worktree is not a directory")
    return root


def check_worktree_present(worktree: Path) -> None:
    """Refuse like :func:`resolve_worktree_root` if ``worktree`` is relative, gone or not a directory.

    For a path that *is* already the worktree's real path (a worker resolves it once when it starts):
    one ``stat`` instead of resolving every component again. Nothing is opened through the result — a
    tool that opens paths resolves them with :func:`resolve_worktree_path` — so a component swapped for
    a symlink since the worker started is caught there (and a command's cwd is only its start).
    """
    if not worktree.is_absolute():
        raise PathRefusedError(reason="the worktree path must be absolute")
    try:
        info = os.stat(worktree)
    except (FileNotFoundError, NotADirectoryError):
        raise PathNotFoundError(reason="the task worktree does not exist") from None
    except OSError as error:
        raise PathRefusedError(reason=f"the task worktree cannot be inspected ({_errno_name(error)})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise PathNotFoundError(reason="the task worktree is not a directory")


def _errno_name(error: OSError) -> str:
    return errno.errorcode.get(error.errno or 0, "error")
