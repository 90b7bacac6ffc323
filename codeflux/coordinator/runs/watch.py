"""One tick of ``codeflux watch``: the approved check command, confined, on a scratch copy of the branch's HEAD.

:func:`run_watch_tick` (called by ``IncidentService/WatchTick``, the one handler the CLI and the browser reach):

1. **Scratch.** HEAD's tree is written afresh into ``<data>/watch/<watch id>-<random>/tree`` (:mod:`codeflux.
   gitwork.watch_scratch`): tracked files at the commit only, so the person's uncommitted changes are never
   watched. The tick's HOME and TMPDIR are beside it; all of it is removed when the tick ends, so nothing a command
   left behind survives to the next tick.
2. **Authority.** The command is bound exactly as the agent's ``run_command`` with that argv (program pinned on
   the worker's ``PATH``: real path and content sha256), and its *repository operation identity* is taken
   (:mod:`codeflux.domain.repository_approvals`: the operation document with the repository's root commits in
   place of a task). It runs only under a live repository approval of exactly that identity — a person's
   ``allow-for-repository`` of that very command in a task of this repository; otherwise
   :class:`~codeflux.domain.errors.WatchNotApprovedError` says how to grant it and nothing runs. While commands
   run unconfined (confinement ``none``) no repository approval counts, as everywhere
   (:mod:`codeflux.authority.repository_approvals`). The watch never grants ``network``.
3. **Confinement.** A worker started for the tick (cwd = the scratch, the coordinator's box: the data directory
   hidden, the scratch read-only — only the watch's own TMPDIR and HOME are writable) runs the command once and
   is stopped. The command's output comes back redacted (the worker's patterns, then every loaded secret).

The watch id (``tsk_…``-shaped, never a task in the store) is a digest of the repository and the argv: the
worker's lease and directories are named by it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.authority.repository_approvals import UNCONFINED_REFUSAL, live_repository_approval_of
from codeflux.coordinator.runs.program_pins import resolve_executable_pin
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import InvalidValueError, OperationFailedError, WatchNotApprovedError
from codeflux.domain.execution import ExecutionState
from codeflux.domain.ids import TaskId, ToolRequestId
from codeflux.domain.operations import derive_operation_identity, describe_operation
from codeflux.domain.repository_approvals import RepositoryRoots, derive_repository_operation_identity
from codeflux.domain.tools import bind_tool_request
from codeflux.domain.watch import WatchTickOutcome
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.gitwork.watch_scratch import write_commit_scratch
from codeflux.store.database import Database
from codeflux.worker.client.confinement import ConfinementChoice, choose_confinement
from codeflux.worker.client.handle import WorkerExecution, WorkerHandle, WorkerOutcome
from codeflux.worker.environment import build_worker_environment

__all__ = ["MAX_WATCH_ARGV", "WatchTick", "grant_hint", "run_watch_tick", "watch_directory"]

MAX_WATCH_ARGV: Final = 64
_MAX_ARGUMENT: Final = 4096
_OUTPUT_CHARS: Final = 200_000  # what of the output becomes the incident text (its tail: the failure is there)


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchTick:
    """What one tick did: the commit it saw, how the command ended, its (redacted) output, under which approval
    and in which box."""

    outcome: WatchTickOutcome
    head: str
    exit_code: int | None
    output: str
    approval_id: str
    confinement: str
    duration_ms: int
    message: str


def _checked_argv(argv: Sequence[str]) -> tuple[str, ...]:
    if not argv or not argv[0]:
        raise InvalidValueError(kind="watch command", reason="give the program and its arguments")
    if len(argv) > MAX_WATCH_ARGV or any(len(a) > _MAX_ARGUMENT or "\x00" in a for a in argv):
        raise InvalidValueError(kind="watch command",
                                reason=f"at most {MAX_WATCH_ARGV} arguments of at most {_MAX_ARGUMENT} characters")
    return tuple(argv)


def _watch_id(snapshot: RepositorySnapshot, argv: Sequence[str]) -> TaskId:
    digest = hashlib.sha256(json.dumps([snapshot.identity, list(argv)]).encode()).digest()
    return TaskId.from_entropy(digest[:16])


def watch_directory(data_dir: Path, snapshot: RepositorySnapshot, argv: Sequence[str]) -> Path:
    """``<data>/watch/<watch id>-<random>``: the scratch tree and the worker's state of one tick (its own, so two
    watches of the same command never share one; removed when the tick ends)."""
    return data_dir / "watch" / f"{_watch_id(snapshot, argv).value}-{os.urandom(4).hex()}"


def grant_hint(snapshot: RepositorySnapshot, argv: Sequence[str]) -> str:
    """How a person allows exactly this command for the repository (the refusal's second half)."""
    return (f"when a task of this repository asks to run exactly {shlex.join(argv)}, answer with allow-for-repository "
            "(the card's button, or `codeflux task decide TASK --request REQ --allow-for-repository`); "
            "`codeflux approvals list --repo PATH` shows what is allowed")


def run_watch_tick(db: Database, *, data_dir: Path, snapshot: RepositorySnapshot, argv: Sequence[str],
                   base_environment: Mapping[str, str] | None = None,
                   confinement: ConfinementChoice | None = None) -> WatchTick:
    """Run one tick (see the module docstring); raises :class:`WatchNotApprovedError` when the command is not
    allowed for the repository (nothing ran)."""
    command = _checked_argv(argv)
    choice = confinement or choose_confinement()
    environment = dict(os.environ if base_environment is None else base_environment)
    home = watch_directory(data_dir, snapshot, command)
    if choice.mode is ConfinementMode.NONE:
        raise WatchNotApprovedError(repository=snapshot.root.name, grant=UNCONFINED_REFUSAL)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        outcome, approval_id = _run_once(db, home=home, snapshot=snapshot, command=command, choice=choice,
                                         environment=environment, data_dir=data_dir)
    finally:
        shutil.rmtree(home, ignore_errors=True)  # nothing of a tick stays: the next one writes HEAD afresh
    output = "\n".join(part for part in (outcome.stdout, outcome.stderr) if part)[-_OUTPUT_CHARS:]
    if outcome.state is ExecutionState.SUCCEEDED and outcome.exit_code == 0:
        ended = WatchTickOutcome.PASSED
    elif outcome.exit_code is not None and outcome.exit_code != 0:
        ended = WatchTickOutcome.FAILED
    else:
        raise OperationFailedError(f"the watched command did not run to an end ({outcome.state.value}: "
                                   f"{outcome.message[:200]})")
    return WatchTick(outcome=ended, head=snapshot.head, exit_code=outcome.exit_code, output=output,
                     approval_id=approval_id,
                     confinement=(outcome.confinement or choice.mode).value, duration_ms=outcome.duration_ms,
                     message=outcome.message)


def _run_once(db: Database, *, home: Path, snapshot: RepositorySnapshot, command: tuple[str, ...],
              choice: ConfinementChoice, environment: dict[str, str], data_dir: Path) -> tuple[WorkerOutcome, str]:
    """Write the scratch, check the approval, run the command once in a worker; the outcome and the approval's id."""
    state_dir, scratch = home / "state", home / "tree"
    write_commit_scratch(snapshot.root, snapshot.head, scratch)
    search_path = build_worker_environment(base=environment, home=state_dir, tmpdir=state_dir)["PATH"]
    request = bind_tool_request("run_command", {"argv": list(command)})
    pin = resolve_executable_pin(command[0], worktree=scratch, search_path=search_path)
    watch_id = _watch_id(snapshot, command)
    operation = describe_operation(request, task_id=watch_id, executable=pin)
    identity = derive_repository_operation_identity(operation, RepositoryRoots.of(snapshot.root_commits))
    approval = live_repository_approval_of(db, identity)
    if approval is None:
        raise WatchNotApprovedError(repository=snapshot.root.name, grant=grant_hint(snapshot, command))
    execution = WorkerExecution.for_request(
        request_id=ToolRequestId.from_entropy(os.urandom(16)), task_id=watch_id,
        operation_identity=derive_operation_identity(operation), request=request, executable=pin)
    with WorkerHandle.start(task_id=watch_id, worktree=scratch, state_dir=state_dir, base_environment=environment,
                            data_dir=data_dir, confinement=choice, worktree_readonly=True) as worker:
        return worker.execute(execution), approval.approval_id.value
