"""How the operating system boxes a process codeflux runs for a task, and what that means in words.

Three modes, strongest first. The mode in force is chosen once per coordinator (what the machine can
do, or what the person forced) and recorded on every execution; it never changes silently.

- ``bubblewrap``: a new user, pid, ipc, uts and (unless the exact operation was granted ``network``)
  network namespace; ``/`` read-only; ``/tmp``, ``/run``, every home directory and the codeflux data
  directory hidden; only the task worktree and the task's own HOME/TMPDIR writable.
- ``landlock``: the fallback where user namespaces are blocked: Landlock lets the process write only
  beneath the worktree and the task's HOME/TMPDIR and read only outside the hidden directories; seccomp
  refuses internet sockets and every ``connect()`` unless ``network`` was granted. Other processes stay
  visible in ``/proc``; their memory is not readable, nor their environment unless codeflux runs as root
  (whose ``CAP_SYS_PTRACE`` passes Landlock's check).
- ``none``: nothing boxes the process. A command that runs a program may then only be allowed once,
  each time, unless the person opted in explicitly.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "ConfinementMode",
    "allow_for_task_refusal",
    "describe_approval",
    "describe_confinement",
    "standing_approval_needs_opt_in",
]


class ConfinementMode(StrEnum):
    """The box a task's processes run in (stored on ``tool_executions.confinement``)."""

    BUBBLEWRAP = "bubblewrap"
    LANDLOCK = "landlock"
    NONE = "none"


def describe_confinement(mode: ConfinementMode, *, network: bool) -> str:
    """One sentence for an approval card or a result: what the box in force really gives."""
    match mode:
        case ConfinementMode.BUBBLEWRAP:
            reach = ("network allowed for this exact command, and with it the host's abstract Unix sockets "
                     "(X11, some session buses)" if network else "no network")
            return (f"confined (bubblewrap): {reach}; no files outside the worktree and the task's own "
                    "home and temp directories are writable; homes, /tmp, /run and codeflux's data are hidden")
        case ConfinementMode.LANDLOCK:
            reach = ("network allowed for this exact command, and the coordinator's socket and the session "
                     "bus are reachable" if network
                     else "no network and no socket connections at all (tests that open local sockets fail)")
            return (f"confined (landlock): {reach}; writes only inside the worktree and the task's own home "
                    "and temp directories; homes and codeflux's data are unreadable; other processes are "
                    "listed, their memory unreadable (their environment too, unless codeflux runs as root)")
        case ConfinementMode.NONE:
            return ("unconfined: this machine cannot box commands (see `codeflux doctor`); the command can "
                    "reach the network, your files and your other programs")


def describe_approval(*, runs_program: bool, network: bool, mode: ConfinementMode) -> str:
    """What approving a request means, for its card: empty for a tool that runs no program."""
    if not runs_program:
        return ""
    return ("runs code from the task's worktree, which the agent can change; "
            + describe_confinement(mode, network=network))


def allow_for_task_refusal(*, runs_program: bool, mode: ConfinementMode) -> str:
    """Why "allow for this task" is not offered for a request (empty when it is)."""
    if runs_program and standing_approval_needs_opt_in(mode):
        return ("this machine cannot confine programs, so each run of one is allowed once (see `codeflux "
                "doctor`)")
    return ""


def standing_approval_needs_opt_in(mode: ConfinementMode) -> bool:
    """True where a program may only be allowed once at a time, unless the person opted in explicitly."""
    return mode is ConfinementMode.NONE
