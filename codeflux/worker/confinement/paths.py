"""What a box hides, what it lets a process write, and which toolchains it shows again read-only.

Hidden: ``/tmp``, ``/var/tmp``, ``/run``, ``/home``, ``/root``, the user's own home wherever it is, and the
codeflux data directory (database, logs, sockets, every task's worktree and state) — plus whatever else the
coordinator names. Writable: the task worktree, the task's own HOME and TMPDIR, and the worktree's own
administrative directory inside the repository's ``.git`` (``.git/worktrees/<task>``: its index and
HEAD), never the rest of ``.git``, which stays readable so git works, but not writable (no hooks, no
``config``). Shown again read-only: Python installations that live under a home (pyenv, uv, poetry):
the coordinator's detection at start (:attr:`BoxPaths.readonly`) and, per command, the installation the
pinned program belongs to (:func:`install_prefix_to_expose`) — the installation, never the home around it.
"""

from __future__ import annotations

import functools
import glob
import os
import pwd
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["ALWAYS_HIDDEN", "BoxPaths", "home_directories", "install_prefix_to_expose", "is_beneath",
           "is_python_installation", "python_prefixes", "reveals_hidden"]

ALWAYS_HIDDEN: Final = (Path("/tmp"), Path("/var/tmp"), Path("/run"), Path("/home"), Path("/root"))  # noqa: S108
_TOOLCHAIN_ROOTS: Final = (".pyenv", ".rye", ".asdf")


@dataclass(frozen=True, kw_only=True)
class BoxPaths:
    """The paths of one task's box, all absolute and resolved (what is hidden is resolved once)."""

    worktree: Path
    home: Path
    tmpdir: Path
    hidden: tuple[Path, ...] = ()
    git_common_dir: Path | None = None
    git_admin_dir: Path | None = None
    readonly: tuple[Path, ...] = ()
    tools: Path | None = None
    """codeflux's check-tool overlays, shown read-only (inside the hidden data directory)."""
    worktree_writable: bool = True
    """False for a watch's scratch copy: the worktree is shown read-only, only HOME and TMPDIR are writable."""

    @property
    def shown_readonly(self) -> tuple[Path, ...]:
        """What is shown again read-only: the Python installations, the tool overlays and a read-only worktree."""
        return (*self.readonly, *(() if self.tools is None else (self.tools,)),
                *(() if self.worktree_writable else (self.worktree,)))

    @functools.cached_property
    def all_hidden(self) -> tuple[Path, ...]:
        """Every hidden directory, outermost first, without ones inside another."""
        return _outermost((*ALWAYS_HIDDEN, *home_directories(), *self.hidden))

    @property
    def writable(self) -> tuple[Path, ...]:
        found = [*((self.worktree,) if self.worktree_writable else ()), self.home, self.tmpdir]
        if self.git_admin_dir is not None:
            found.append(self.git_admin_dir)
        return tuple(found)

    def is_visible(self, path: Path) -> bool:
        """True if ``path`` can be seen in the box: not hidden, or shown again."""
        if any(is_beneath(path, shown) for shown in (*self.writable, *self.shown_readonly)):
            return True
        if self.git_common_dir is not None and is_beneath(path, self.git_common_dir):
            return True
        return not any(is_beneath(path, hidden) for hidden in self.all_hidden)


def home_directories() -> tuple[Path, ...]:
    """The current user's home from the password database, wherever it lives (a worker's ``$HOME`` is the
    task's own, so the coordinator adds the ``$HOME`` it was started with to :attr:`BoxPaths.hidden`)."""
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return ()
    return (Path(os.path.realpath(home)),) if os.path.isabs(home) and home != "/" else ()


def is_beneath(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def reveals_hidden(path: Path, paths: BoxPaths) -> bool:
    """True if showing ``path`` would show a hidden directory whole (it is one, or contains one)."""
    resolved = Path(os.path.realpath(path))
    return any(is_beneath(root, resolved) for root in paths.all_hidden)


def install_prefix_to_expose(program: str, paths: BoxPaths, *, started_as: str = "") -> tuple[Path, ...]:
    """The read-only directories a hidden program needs: its Python installation or toolchain root.

    ``started_as`` is the ``argv[0]`` it is started as, when that is a path: a ``.venv/bin/python`` link
    to an interpreter elsewhere makes Python read the environment beside the link. Nothing when the
    program is visible anyway. A program under a home that is neither part of a Python installation nor
    of a known toolchain root is exposed as the single file (its siblings — credentials, say — stay hidden).
    """
    wanted: list[Path] = []
    named = [program, os.path.realpath(program)]
    if os.path.isabs(started_as):
        named += [started_as, os.path.realpath(started_as)]
    for candidate in dict.fromkeys(Path(name) for name in named):
        if not candidate.is_absolute() or paths.is_visible(candidate):
            continue
        wanted.append(_installation_of(candidate, paths) or candidate)
    return tuple(dict.fromkeys(wanted))


def _installation_of(program: Path, paths: BoxPaths) -> Path | None:
    """The nearest enclosing toolchain root or Python installation that is itself hidden (never one that
    contains a hidden directory, such as ``/``)."""
    for ancestor in program.parents:
        if paths.is_visible(ancestor) or not any(is_beneath(ancestor, root) and ancestor != root
                                                  for root in paths.all_hidden):
            return None
        if ancestor.name in _TOOLCHAIN_ROOTS or is_python_installation(ancestor):
            return ancestor
    return None


def is_python_installation(directory: Path) -> bool:
    """True for a Python prefix: ``lib/python3.*/os.py`` (an interpreter) or ``pyvenv.cfg`` (a venv)."""
    if (directory / "pyvenv.cfg").is_file():
        return True
    return any(os.path.isfile(found) for found in glob.glob(str(directory / "lib" / "python3*" / "os.py")))


def python_prefixes(worktree: Path, search_path: str) -> tuple[Path, ...]:
    """Python installations commands of this worktree will use: ``.venv``/``venv`` (and its base, read
    from ``pyvenv.cfg`` but kept only if it really is an installation) and ``python3`` on the search path —
    its installation and, when that ``python3`` is a virtual environment's (``<env>/bin`` beside a regular
    ``pyvenv.cfg``: an activated one), the environment itself, unless it would be a home or a hidden root.

    Called by the coordinator; the answer is only ever exposed read-only, and only when it passes
    :func:`is_python_installation`, so a poisoned ``pyvenv.cfg`` cannot show a home's other files.
    """
    found: list[Path] = []
    for name in (".venv", "venv"):
        venv = worktree / name
        config = venv / "pyvenv.cfg"
        if not config.is_file() or config.is_symlink():
            continue
        found.append(venv)
        for line in _read_small(config).splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and os.path.isabs(value.strip()):
                found.append(Path(value.strip()).parent)
    for entry in search_path.split(":"):
        python = Path(entry) / "python3"
        if entry.startswith("/") and python.exists():
            environment = Path(os.path.realpath(entry)).parent
            config = environment / "pyvenv.cfg"
            if Path(entry).name == "bin" and config.is_file() and not config.is_symlink() \
                    and not _is_a_home(environment):
                found.append(environment)
            found.append(Path(os.path.realpath(python)).parent.parent)
            break
    return tuple(dict.fromkeys(Path(os.path.realpath(path)) for path in found
                               if is_python_installation(Path(os.path.realpath(path)))))


def _is_a_home(directory: Path) -> bool:
    home = os.environ.get("HOME", "")
    return directory in ALWAYS_HIDDEN or directory.parent == Path("/home") or len(directory.parts) < 2 \
        or (os.path.isabs(home) and directory == Path(os.path.realpath(home)))


def _read_small(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(16 * 1024).decode("utf-8", "replace")
    except OSError:
        return ""


def _outermost(paths: Iterable[Path]) -> tuple[Path, ...]:
    resolved = sorted({Path(os.path.realpath(path)) for path in paths if str(path) != "/"},
                      key=lambda path: len(path.parts))
    kept: list[Path] = []
    for path in resolved:
        if not any(is_beneath(path, outer) for outer in kept):
            kept.append(path)
    return tuple(kept)

