"""The bubblewrap profile: the argv that starts one program boxed.

New user, pid, ipc, uts, cgroup and network namespaces (``--unshare-all``); the network namespace is
shared again only when the exact operation was granted ``network`` (``--share-net``). The program leads
a new session (no terminal injection) and dies with its parent. ``/`` is mounted read-only with a fresh
``/proc`` (only the box's own processes), a minimal ``/dev`` with its own ``/dev/shm``, and an empty tmpfs
over every hidden directory (:attr:`BoxPaths.all_hidden`), read-only except the scratch ``/tmp`` and
``/var/tmp``. Then, on top, read-only: the installations a command needs, codeflux's check-tool overlays
and the repository's common ``.git``; read-write: the worktree, the task's HOME and TMPDIR and the worktree's own
``.git/worktrees/<task>`` directory. The later a mount, the more it wins.

The profile is the same for every command of a worker but for the network and the installation a
hidden program needs, so :class:`BubblewrapProfile` builds the two fixed parts once.

bubblewrap 0.8 has no ``--argv0``, and ``argv[0]`` matters (Python finds a virtual environment from the
``.venv/bin/python`` it was started as, not from the interpreter that link points to), so when ``argv[0]``
differs from the pinned program — and is not simply found on ``PATH`` as that very file — the box runs
``bash -p -c 'exec -a "$0" "$@"' ARGV0 PROGRAM ARGS…`` (``-p``: no ``BASH_ENV`` and no functions imported
from the environment; about 1 ms). Without ``/bin/bash`` the program sees its pinned path as ``argv[0]``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from codeflux.worker.confinement.paths import BoxPaths

__all__ = ["BubblewrapProfile"]

_SHELL: Final = "/bin/bash"
_SCRATCH: Final = (Path("/tmp"), Path("/var/tmp"))  # noqa: S108 (empty and writable in the box, gone after it)


class BubblewrapProfile:
    """The bwrap argv of one box, its fixed parts computed once."""

    __slots__ = ("_head", "_shell", "_tail", "_worktree")

    def __init__(self, bwrap: str, paths: BoxPaths) -> None:
        hidden = [path for path in paths.all_hidden if os.path.isdir(path)]
        head = ["--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                "--tmpfs", "/dev/shm"]  # noqa: S108
        for path in hidden:
            head += ["--tmpfs", str(path)]
        for shown in paths.shown_readonly:
            if os.path.exists(shown):
                head += ["--ro-bind", str(shown), str(shown)]
        if paths.git_common_dir is not None and paths.git_common_dir.is_dir():
            head += ["--ro-bind", str(paths.git_common_dir), str(paths.git_common_dir)]
        for writable in paths.writable:
            if writable.is_dir():
                head += ["--bind", str(writable), str(writable)]
        tail: list[str] = []
        for path in hidden:  # last: the binds made their mount points inside these first
            if path not in _SCRATCH:
                tail += ["--remount-ro", str(path)]
        self._worktree = paths.worktree
        self._head = (bwrap, head)
        self._tail = tail
        self._shell = _SHELL if os.access(_SHELL, os.X_OK) else None

    def argv(self, program: str, argv: Sequence[str], *, network: bool, readonly: Sequence[Path] = (),
             keep_argv0: bool = True, cwd: Path | None = None) -> list[str]:
        """``bwrap … -- program argv[1:]…``, with ``argv[0]`` kept as written when ``keep_argv0`` and it
        differs from ``program`` (absolute); it starts in ``cwd`` (the worktree when None)."""
        bwrap, head = self._head
        tail = [*self._tail, "--chdir", str(cwd or self._worktree), "--"]
        boxed = [bwrap, "--unshare-all", *(["--share-net"] if network else []), *head]
        for shown in readonly:
            if os.path.exists(shown):
                boxed += ["--ro-bind", str(shown), str(shown)]
        if not keep_argv0 or argv[0] == program or self._shell is None:
            return [*boxed, *tail, program, *argv[1:]]
        return [*boxed, *tail, self._shell, "-p", "-c", 'exec -a "$0" "$@"', argv[0], program, *argv[1:]]
