"""Every program the worker starts: its own session and process group, tracked, killed whole at the end.

:class:`ProcessGroups` spawns argv-only (never a shell) with ``start_new_session=True``, so a program
and everything it forks share one process group whose id is the program's pid. :meth:`finish` kills
that group with ``SIGKILL`` on *every* exit path — after a successful exit too — so a backgrounded
``sleep`` cannot outlive the command that started it. The group is killed while the leader is still an
unreaped zombie (``waitid(WNOWAIT)``), so its id cannot have been reused by an unrelated process.

Descendants that leave the group (``setsid``, double forks) are caught too: the worker makes itself a
*child subreaper* (``PR_SET_CHILD_SUBREAPER``), so orphans are re-parented to it instead of ``init``,
and :meth:`sweep_strays` kills and reaps every child that is not a tracked program (the worker's watchdog
runs it as soon as a program finishes, see ``sweep_requested``, and on every tick).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["ProcessGroups", "become_child_subreaper", "kill_process_group"]

_PR_SET_CHILD_SUBREAPER: Final = 36
_REAP_TIMEOUT_S: Final = 5.0


def become_child_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process (Linux); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def kill_process_group(pgid: int) -> bool:
    """``SIGKILL`` the whole group ``pgid``; False if no process of it was left."""
    if pgid <= 1:
        return False
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class ProcessGroups:
    """The worker's running programs, each the leader of its own process group.

    ``sweep_strays`` enables :meth:`sweep_strays`; only a process that made itself a child subreaper
    (the worker) should enable it, since it kills *every* untracked child of the current process.
    """

    def __init__(self, *, sweep_strays: bool = False) -> None:
        self._sweeps = sweep_strays
        self.sweep_requested = threading.Event()
        # Held while spawning and while sweeping, so a sweep never mistakes a program that is being
        # started for a stray.
        self._lock = threading.Lock()
        self._live: set[int] = set()

    def spawn(
        self,
        argv: Sequence[str],
        *,
        executable: str | None,
        cwd: Path,
        env: Mapping[str, str],
        stdin_piped: bool,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` (no shell) as the leader of a new session; stdout and stderr are pipes.

        Raises ``OSError`` (``FileNotFoundError``, ``PermissionError``…) if it could not start.
        """
        with self._lock:
            process = subprocess.Popen(
                list(argv),
                executable=executable,
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.PIPE if stdin_piped else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
                close_fds=True,
            )
            self._live.add(process.pid)
        return process

    @staticmethod
    def has_exited(process: subprocess.Popen[bytes]) -> bool:
        """True once the leader has exited; it stays an unreaped zombie, pinning its pid and group id."""
        if process.returncode is not None:
            return True
        try:
            found = os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return found is not None

    def finish(self, process: subprocess.Popen[bytes]) -> int:
        """Kill the program's whole group, reap the leader and return its exit status (-N for signal N).

        Safe to call on every exit path, however the program ended; idempotent.
        """
        kill_process_group(process.pid)
        deadline = time.monotonic() + _REAP_TIMEOUT_S
        while process.returncode is None and time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.05)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with self._lock:
            self._live.discard(process.pid)
        # Escaped descendants are swept by the worker's watchdog thread right after, off the result's
        # path (a sweep reads all of /proc); the program's own group is already dead.
        self.sweep_requested.set()
        return process.returncode if process.returncode is not None else -int(signal.SIGKILL)

    def live_groups(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._live)

    def kill_all(self) -> int:
        """``SIGKILL`` every tracked group and every stray child; the number of groups signalled."""
        killed = sum(kill_process_group(pgid) for pgid in self.live_groups())
        self.sweep_strays(everything=True)
        return killed

    def sweep_strays(self, *, everything: bool = False) -> int:
        """Reap dead untracked children; when no program is running (or ``everything``), kill live ones.

        Untracked children are descendants that were re-parented to the worker (it is a subreaper):
        they escaped their program's group (``setsid``) or outlived their parent. While some program
        still runs, a live stray may belong to it, so it is left until that program finishes.
        """
        if not self._sweeps:
            return 0
        me = os.getpid()
        with self._lock:
            strays = [child for child in _children_of(me) if child.pid not in self._live]
            if everything or not self._live:
                for child in strays:
                    if not child.zombie:
                        kill_process_group(child.pid)
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.kill(child.pid, signal.SIGKILL)
            for child in strays:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(child.pid, os.WNOHANG)
        return len(strays)


@dataclass(frozen=True, slots=True)
class _Child:
    pid: int
    zombie: bool


def _children_of(parent: int) -> list[_Child]:
    children = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                text = handle.read()
        except OSError:
            continue
        # The command name (field 2) is in parentheses and may hold spaces or ')'; the fields after
        # the last ')' are fixed: state, ppid, pgrp, …
        fields = text[text.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == parent:
            children.append(_Child(pid=int(entry.name), zombie=fields[0] in (b"Z", b"X")))
    return children
