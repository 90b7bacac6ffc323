"""Which box task processes run in, chosen once per coordinator, and the facts each worker's box needs.

The strongest mode the machine can run is chosen (bubblewrap, else Landlock + seccomp, else none).
``CODEFLUX_CONFINEMENT`` (``auto``, ``bubblewrap``, ``landlock``, ``none``) forces a mode: a stronger one
the machine cannot run is an error (:class:`ConfinementUnavailableError`), never a quiet downgrade; a
weaker one is recorded on every execution like any other. The probe runs once per process.

:func:`box_request` computes, from the task row (never from files in the worktree, which the agent can
change), what a worker's box hides, shows and lets it write; the worker checks and applies it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import ConfinementUnavailableError, InvalidValueError
from codeflux.worker.confinement import ConfinementProbe, probe_confinement
from codeflux.worker.confinement.paths import python_prefixes

__all__ = ["CONFINEMENT_VARIABLE", "ConfinementChoice", "box_request", "choose_confinement", "task_git_directories"]

CONFINEMENT_VARIABLE: Final = "CODEFLUX_CONFINEMENT"
_CHOICES: Final = ("auto", *(mode.value for mode in ConfinementMode))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfinementChoice:
    """The mode in force, the bwrap it uses, and why no stronger mode is in force (empty when none is)."""

    mode: ConfinementMode
    bubblewrap: str | None
    forced: bool
    weaker_because: str


def choose_confinement(requested: str | None = None) -> ConfinementChoice:
    """The mode for this coordinator: ``requested``, else ``$CODEFLUX_CONFINEMENT``, else ``auto``."""
    wanted = (requested if requested is not None else os.environ.get(CONFINEMENT_VARIABLE, "auto")).strip() or "auto"
    if wanted not in _CHOICES:
        raise InvalidValueError(kind=CONFINEMENT_VARIABLE, reason=f"must be one of {', '.join(_CHOICES)}")
    return _choose(wanted)


@functools.cache
def _probe() -> ConfinementProbe:
    return probe_confinement()  # once per process, whichever modes are asked for


@functools.lru_cache(maxsize=8)
def _choose(wanted: str) -> ConfinementChoice:
    probe = _probe()
    if wanted == "auto":
        mode = probe.best
        reasons = [problem for problem in (probe.bubblewrap_problem, probe.landlock_problem) if problem]
        return ConfinementChoice(mode=mode, bubblewrap=probe.bubblewrap, forced=False,
                                 weaker_because="; ".join(reasons) if mode is not ConfinementMode.BUBBLEWRAP else "")
    mode = ConfinementMode(wanted)
    if not probe.supports(mode):
        raise ConfinementUnavailableError(mode=mode.value, reason=probe.problem_of(mode))
    weaker = "" if mode is probe.best else f"forced by {CONFINEMENT_VARIABLE}"
    return ConfinementChoice(mode=mode, bubblewrap=probe.bubblewrap if mode is ConfinementMode.BUBBLEWRAP else None,
                             forced=True, weaker_because=weaker)


def task_git_directories(repository_root: Path, worktree: Path) -> tuple[Path | None, Path | None]:
    """The repository's common ``.git`` and the task worktree's own directory in it (``worktrees/<name>``).

    Found from the common directory's records (``worktrees/*/gitdir``), which the box keeps read-only —
    never from the worktree's ``.git`` file, which task code could rewrite to point anywhere.
    """
    common = Path(os.path.realpath(repository_root / ".git"))
    if not common.is_dir():
        return None, None
    wanted = os.path.realpath(worktree / ".git")
    records = common / "worktrees"
    try:
        names = sorted(os.listdir(records))
    except OSError:
        return common, None
    for name in names:
        try:
            recorded = (records / name / "gitdir").read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if os.path.realpath(recorded) == wanted:
            return common, Path(os.path.realpath(records / name))
    return common, None


def _own_home() -> list[str]:
    home = os.environ.get("HOME", "")
    return [os.path.realpath(home)] if os.path.isabs(home) and os.path.realpath(home) != "/" else []


def box_request(choice: ConfinementChoice, *, worktree: Path, repository_root: Path | None, data_dir: Path,
                search_path: str, tools: Path | None = None, worktree_readonly: bool = False) -> dict[str, object]:
    """The ``confinement`` part of a worker's startup configuration for the task in ``worktree``.

    ``repository_root`` is the task's repository as recorded (None: no git directory is shown, so git
    works in the box only where the repository is visible anyway). ``tools`` is the directory of codeflux's
    check-tool overlays (``<data>/tools``, :mod:`codeflux.pipeline.tool_overlay`): shown read-only, while the
    rest of the data directory stays hidden. ``worktree_readonly`` shows the worktree read-only (a watch's scratch
    copy of a commit: only the box's HOME and TMPDIR are writable).
    """
    common, admin = (None, None) if repository_root is None else task_git_directories(repository_root, worktree)
    if admin is not None and common is not None and common / "worktrees" not in admin.parents:
        admin = None
    return {
        "mode": choice.mode.value,
        "bubblewrap": choice.bubblewrap if choice.mode is ConfinementMode.BUBBLEWRAP else None,
        "hidden": [os.path.realpath(data_dir), *_own_home()],
        "readonly": [str(path) for path in python_prefixes(Path(os.path.realpath(worktree)), search_path)],
        "git_common_dir": None if common is None else str(common),
        "git_admin_dir": None if admin is None else str(admin),
        "tools": None if tools is None else os.path.realpath(tools),
        "worktree_readonly": worktree_readonly,
    }
