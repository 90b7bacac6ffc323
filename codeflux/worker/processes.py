"""Every program the worker starts: its own session and process group, tracked, killed whole at the end.

:class:`ProcessGroups` spawns argv-only (never a shell) with ``start_new_session=True``, so a program
and everything it forks share one process group whose id is the program's pid. :meth:`finish` kills
that group with ``SIGKILL`` on *every* exit path — after a successful exit too — so a backgrounded
``sleep`` cannot outlive the command that started it. The group is killed while the leader is still an
unreaped zombie (``waitid(WNOWAIT)``), so its id cannot have been reused by an unrelated process.

Descendants that leave the group (``setsid``, double forks) are caught too: the worker makes itself a
*child subreaper* (``PR_SET_CHILD_SUBREAPER``), so orphans are re-parented to it instead of ``init``,
and :meth:`sweep_strays` kills and reaps every child that is not a tracked program (the worker's watchdog
runs it on every tick, and :meth:`finish` as soon as a program ends). The children are read from the
kernel's per-thread ``children`` lists — a few small files, so the sweep at the end of every command
costs microseconds and runs inline — with a scan of all of ``/proc`` as the fallback where those lists
are missing (that sweep is then handed to the watchdog, see ``sweep_requested``, off the result's path).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence, Set
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
        self._children_listed = sweep_strays and _children_are_listed()  # a kernel feature: probed once

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
        if process.poll() is None:  # usually reaped right here: the pump saw the exit (or the kill just landed)
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
        # The program's own group is dead; descendants that escaped it are swept now when the kernel
        # lists our children cheaply (microseconds), else by the watchdog thread right after, off the
        # result's path (a scan of all of /proc costs milliseconds). Either way the watchdog's tick
        # sweeps again, for strays still being re-parented to us at this moment.
        if self._children_listed:
            self.sweep_strays(quick=True)
        else:
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

    def sweep_strays(self, *, everything: bool = False, quick: bool = False) -> int:
        """Reap dead untracked children; when no program is running (or ``everything``), kill live ones.

        Untracked children are descendants that were re-parented to the worker (it is a subreaper):
        they escaped their program's group (``setsid``) or outlived their parent. While some program
        still runs, a live stray may belong to it, so it is left until that program finishes.

        ``quick`` reads only the main thread's list: the kernel re-parents an orphan to the first live
        thread of its subreaper, which is the main thread while the worker serves. A full sweep (the
        watchdog's tick) reads every thread's list, or scans ``/proc`` where those lists are missing.
        """
        if not self._sweeps:
            return 0
        me = os.getpid()
        with self._lock:
            strays = _children_of(me, skipping=self._live, quick=quick)
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


def _children_are_listed() -> bool:
    """True where the kernel keeps per-thread ``children`` lists (``CONFIG_PROC_CHILDREN``)."""
    me = os.getpid()
    return os.path.exists(f"/proc/{me}/task/{me}/children")


def _children_of(parent: int, *, skipping: Set[int], quick: bool = False) -> list[_Child]:
    """The children of ``parent`` (the current process) except ``skipping``: from the kernel's per-thread
    ``children`` lists (only the main thread's when ``quick``), else from a scan of all of ``/proc``."""
    pids = _listed_children(parent, quick=quick)
    if pids is None:
        return [child for child in _scanned_children(parent) if child.pid not in skipping]
    children = []
    for pid in pids:
        if pid in skipping:
            continue
        zombie = _state_of(pid)
        if zombie is not None:
            children.append(_Child(pid=pid, zombie=zombie))
    return children


def _listed_children(parent: int, *, quick: bool) -> list[int] | None:
    """Pids in ``/proc/<parent>/task/<tid>/children`` for every thread (a child is listed under the
    thread that forked it, or that adopted it), or None where those lists are missing.

    The kernel builds a list while it is read, so a child that appears or exits meanwhile may be
    missed; the watchdog sweeps again on its next tick, so a missed stray is only caught later.
    """
    try:
        tids = [str(parent)] if quick else os.listdir(f"/proc/{parent}/task")
    except OSError:
        return None
    pids: list[int] = []
    listed = False
    for tid in tids:
        try:
            pids.extend(int(field) for field in _read_proc_file(f"/proc/{parent}/task/{tid}/children").split())
        except OSError:  # the thread ended while we looked, or the kernel keeps no lists
            continue
        listed = True
    return pids if listed else None


def _state_of(pid: int) -> bool | None:
    """True if ``pid`` is a zombie, False if it lives, None if it is gone."""
    try:
        text = _read_proc_file(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2 :].split()
    return bool(fields) and fields[0] in (b"Z", b"X")


def _read_proc_file(path: str) -> bytes:
    """The whole of a small ``/proc`` file, read with plain system calls (no buffered file object)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        parts = []
        while chunk := os.read(descriptor, 65536):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(descriptor)


def _scanned_children(parent: int) -> list[_Child]:
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
