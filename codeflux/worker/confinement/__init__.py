"""The one confinement layer: every process a worker starts for a task runs inside an OS box.

:class:`Confinement` turns the argv of a command (``run_command``, every pipeline check) or of a git
subprocess into the argv that starts it boxed, for the mode chosen when the worker started:

- ``bubblewrap`` (:mod:`.bubblewrap`): namespaces and mounts, see that module for the profile;
- ``landlock`` (:mod:`.landlock`, applied by :mod:`.launcher`, a small launcher that restricts itself
  and then execs — never ``preexec_fn`` in the threaded worker);
- ``none``: the argv unchanged; the coordinator only gets here when the machine can do neither, and
  its authority rules then allow programs only once at a time (see
  :func:`codeflux.domain.confinement.standing_approval_needs_opt_in`).

The box is derived from the exact approved operation: the network is reachable only when the
operation's approved needs include ``network`` (``network=True`` here). What is hidden and what is
writable comes from :class:`BoxPaths`, fixed when the worker starts from facts the coordinator
computed (never from files in the worktree, which the agent can change).

:func:`probe_confinement` says which modes this machine can run; it runs a real ``bwrap`` once and asks
the kernel for its Landlock ABI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import InvalidValueError
from codeflux.worker.confinement.bubblewrap import BubblewrapProfile
from codeflux.worker.confinement.landlock import landlock_abi, seccomp_supported
from codeflux.worker.confinement.launcher import launcher_argv
from codeflux.worker.confinement.paths import (
    BoxPaths,
    install_prefix_to_expose,
    is_python_installation,
    reveals_hidden,
)
from codeflux.worker.interpreter import frozen_runtime_environment, without_frozen_runtime
from codeflux.worker.startup import StartupConfig

__all__ = [
    "BoxPaths",
    "Confinement",
    "ConfinementProbe",
    "probe_confinement",
    "unconfined",
    "worker_confinement",
]

_PROBE_TIMEOUT_S: Final = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfinementProbe:
    """Which modes work here, and why the stronger ones do not (one safe line each)."""

    bubblewrap: str | None  # the path of a working bwrap, or None
    bubblewrap_problem: str
    landlock_abi: int  # 0 when Landlock is unavailable
    landlock_problem: str

    @property
    def best(self) -> ConfinementMode:
        if self.bubblewrap is not None:
            return ConfinementMode.BUBBLEWRAP
        if not self.landlock_problem:
            return ConfinementMode.LANDLOCK
        return ConfinementMode.NONE

    def supports(self, mode: ConfinementMode) -> bool:
        match mode:
            case ConfinementMode.BUBBLEWRAP:
                return self.bubblewrap is not None
            case ConfinementMode.LANDLOCK:
                return not self.landlock_problem
            case ConfinementMode.NONE:
                return True

    def problem_of(self, mode: ConfinementMode) -> str:
        match mode:
            case ConfinementMode.BUBBLEWRAP:
                return self.bubblewrap_problem
            case ConfinementMode.LANDLOCK:
                return self.landlock_problem
            case ConfinementMode.NONE:
                return ""


def probe_confinement(*, search_path: str | None = None) -> ConfinementProbe:
    """Try a real ``bwrap`` box and ask the kernel for Landlock and seccomp (about 10 ms)."""
    bwrap, bwrap_problem = _probe_bubblewrap(search_path)
    abi = landlock_abi()
    if abi < 1:
        landlock_problem = "the kernel offers no Landlock (it needs Linux 5.13 or newer with Landlock enabled)"
    elif not seccomp_supported():
        landlock_problem = "seccomp filters are unavailable for this processor or kernel"
    else:
        landlock_problem = ""
    return ConfinementProbe(bubblewrap=bwrap, bubblewrap_problem=bwrap_problem, landlock_abi=max(abi, 0),
                            landlock_problem=landlock_problem)


def _probe_bubblewrap(search_path: str | None) -> tuple[str | None, str]:
    found = shutil.which("bwrap", path=search_path or "/usr/local/bin:/usr/bin:/bin")
    if found is None:
        return None, "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    true = shutil.which("true", path="/usr/bin:/bin") or "/bin/true"
    try:
        done = subprocess.run([found, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
                               "--proc", "/proc", "--dev", "/dev", "--", true],
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"bubblewrap could not start ({type(error).__name__})"
    if done.returncode != 0:
        first = next((line.strip() for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()),
                     f"exit {done.returncode}")
        return None, (f"bubblewrap cannot create user namespaces here ({first[:160]}); allow unprivileged user "
                      "namespaces (e.g. an AppArmor profile for bwrap on Ubuntu ≥ 23.10)")
    return found, ""


class Confinement:
    """The box every process of one worker is started in (see the module docstring)."""

    __slots__ = ("_launcher_environment", "_profile", "bubblewrap", "landlock_abi", "mode", "paths", "python")

    def __init__(self, *, mode: ConfinementMode, paths: BoxPaths, bubblewrap: str | None = None,
                 landlock_abi: int = 0, python: str | None = None) -> None:
        if mode is ConfinementMode.BUBBLEWRAP and bubblewrap is None:
            raise InvalidValueError(kind="confinement", reason="bubblewrap mode needs the path of bwrap")
        self.mode = mode
        self.paths = paths
        self.bubblewrap = bubblewrap
        self.landlock_abi = landlock_abi
        self.python = python or sys.executable
        # A frozen build's launcher is this binary again: it runs from the unpacked directory through these (the
        # launcher removes them before it execs the program), instead of unpacking the archive per command.
        self._launcher_environment = frozen_runtime_environment() if mode is ConfinementMode.LANDLOCK else {}
        self._profile = BubblewrapProfile(bubblewrap, paths) if bubblewrap and mode is ConfinementMode.BUBBLEWRAP \
            else None

    def command(self, argv: Sequence[str], *, executable: str | None, network: bool,
                search_path: str | None = None, cwd: Path | None = None) -> tuple[list[str], str | None]:
        """The argv (and executable) that start ``argv`` boxed; ``executable`` is the program to exec
        (``argv[0]`` resolved) or None to search ``argv[0]`` as given. ``search_path`` is the ``PATH``
        the command runs with: an ``argv[0]`` found there as exactly ``executable`` need not be kept.
        ``cwd`` is where it starts inside the box (the worktree when None)."""
        program = executable or argv[0]
        if self.mode is ConfinementMode.NONE:
            return list(argv), executable
        if self._profile is not None:
            exposed = install_prefix_to_expose(program, self.paths, started_as=argv[0])
            keep = argv[0] != program and _located(argv[0], search_path) != program
            return self._profile.argv(program, argv, network=network, readonly=exposed,
                                      keep_argv0=keep, cwd=cwd), self.bubblewrap
        return launcher_argv(self.python, self.paths, program, list(argv), network=network,
                             abi=self.landlock_abi), self.python


    def environment(self, environment: Mapping[str, str]) -> dict[str, str]:
        """The environment to start :meth:`command`'s argv with: ``environment`` (a command's) never carrying a
        frozen build's PyInstaller variables to the program, except to this build's own Landlock launcher, which
        needs them to run from the unpacked directory and removes them before it execs the program."""
        return {**without_frozen_runtime(environment), **self._launcher_environment}


def _located(name: str, search_path: str | None) -> str | None:
    """The path ``name`` runs as: itself when it has a slash, else its first match on ``search_path``."""
    if "/" in name:
        return os.path.abspath(name)
    return shutil.which(name, path=search_path or os.defpath)


def worker_confinement(config: StartupConfig, environment: Mapping[str, str]) -> Confinement:
    """The box a worker starts its processes in, from its startup configuration.

    The mode is the coordinator's choice; it is checked here and the worker refuses to serve
    (:class:`InvalidValueError`) when it cannot really provide it — never a quieter box instead.
    """
    box = config.box
    home, tmpdir = environment.get("HOME", ""), environment.get("TMPDIR", "")
    if not (os.path.isabs(home) and os.path.isabs(tmpdir)):
        raise InvalidValueError(kind="worker confinement", reason="HOME and TMPDIR must be absolute task directories")
    paths = BoxPaths(worktree=Path(os.path.realpath(config.worktree)), home=Path(os.path.realpath(home)),
                     tmpdir=Path(os.path.realpath(tmpdir)), hidden=box.hidden,
                     git_common_dir=box.git_common_dir, git_admin_dir=box.git_admin_dir,
                     worktree_writable=not box.worktree_readonly)
    for shown in (paths.worktree, paths.home, paths.tmpdir, box.git_common_dir):
        if shown is not None and reveals_hidden(shown, paths):
            raise InvalidValueError(kind="worker confinement", reason="a path shown in the box contains a hidden one")
    paths = replace(paths, readonly=tuple(path for path in box.readonly
                                          if is_python_installation(path) and not reveals_hidden(path, paths)))
    if box.tools is not None:
        tools = Path(os.path.realpath(box.tools))
        if reveals_hidden(tools, paths) or tools.name != "tools":
            raise InvalidValueError(kind="worker confinement", reason="the tool overlays must be a tools folder "
                                    "that contains no hidden directory")
        paths = replace(paths, tools=tools)
    abi = 0
    match box.mode:
        case ConfinementMode.BUBBLEWRAP:
            if box.bubblewrap is None or not os.access(box.bubblewrap, os.X_OK):
                raise InvalidValueError(kind="worker confinement", reason="bubblewrap is not executable here")
        case ConfinementMode.LANDLOCK:
            abi = landlock_abi()
            if abi < 1 or not seccomp_supported():
                raise InvalidValueError(kind="worker confinement", reason="Landlock or seccomp is unavailable here")
        case ConfinementMode.NONE:
            pass
    return Confinement(mode=box.mode, paths=paths, bubblewrap=box.bubblewrap, landlock_abi=abi)


def unconfined(worktree: Path) -> Confinement:
    """No box at all: for code that runs programs outside any task (and tests of the tools themselves)."""
    return Confinement(mode=ConfinementMode.NONE, paths=BoxPaths(worktree=worktree, home=worktree, tmpdir=worktree))
