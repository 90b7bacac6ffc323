"""What the stage runner is handed: the task's facts and the ports to the ledger, the worker and review.

Ports are :class:`typing.Protocol` types; the coordinator passes its services (the task service is a
:class:`LedgerPort` as it is) or small adapters over them. Nothing here does I/O.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

from codeflux.domain.covering_tests import ChangedFile, CoveringTests
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName, StageVerdict
from codeflux.domain.pipeline.obligations import NewObligation, ObligationChange, ObligationKind, ObligationRecord
from codeflux.domain.plans import Plan
from codeflux.gitwork.task_worktree import TaskWorktree
from codeflux.store.stage_ledger import LedgerRow

__all__ = [
    "WHEELS_FOLDER",
    "AcceptancePort",
    "AcceptanceRecord",
    "CheckCommandPort",
    "CheckCommandRun",
    "LedgerPort",
    "MemoryPort",
    "ObligationPort",
    "PipelinePorts",
    "RecalledAtom",
    "SettingsPort",
    "TaskFacts",
    "ToolSource",
]

WHEELHOUSE_VARIABLE: Final = "CODEFLUX_TOOL_WHEELHOUSE"
INDEX_VARIABLE: Final = "CODEFLUX_TOOL_INDEX_URL"

WHEELS_FOLDER: Final = "wheels"
"""Where an install from a wheelhouse finds its wheels: relative to the install's working directory."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSource:
    """Where an overlay is installed from: a ``wheelhouse`` directory, an index URL, or — neither set, the
    default — codeflux's own installation (its check tools rebuilt as wheels:
    :mod:`~codeflux.pipeline.own_wheels`). Only an index needs the network.

    A coordinator option (:meth:`from_environment` reads ``$CODEFLUX_TOOL_WHEELHOUSE`` /
    ``$CODEFLUX_TOOL_INDEX_URL`` when the coordinator starts; ``cmd/codeflux-dev setup`` fills
    ``.artifacts/wheelhouse`` for the tests and development). ``declined`` says why no install may be asked
    for at all (a headless run without ``--allow-check-tools``): the stages are then ``blocked`` saying so."""

    wheelhouse: Path | None = None
    index_url: str | None = None
    declined: str | None = None

    @classmethod
    def from_environment(cls, environment: Mapping[str, str]) -> ToolSource:
        wheelhouse = environment.get(WHEELHOUSE_VARIABLE, "").strip()
        if wheelhouse and os.path.isabs(wheelhouse):
            return cls(wheelhouse=Path(wheelhouse))
        index = environment.get(INDEX_VARIABLE, "").strip()
        if index.startswith(("https://", "http://", "file://")):
            return cls(index_url=index)
        return cls()

    @property
    def own(self) -> bool:
        """The wheels come from codeflux's own installation."""
        return self.wheelhouse is None and self.index_url is None

    @property
    def needs_network(self) -> bool:
        return self.index_url is not None

    def pip_arguments(self) -> tuple[str, ...]:
        if self.index_url is not None:
            return ("--index-url", self.index_url)
        # the wheels are copied (or rebuilt) into the install's own folder under the task's TMPDIR first: a box
        # shows no /tmp, home or data directory, so a wheelhouse itself may be out of its sight
        return ("--no-index", "--find-links", WHEELS_FOLDER)

    def describe(self) -> str:
        if self.wheelhouse is not None:
            return f"wheelhouse {self.wheelhouse}"
        return f"index {self.index_url}" if self.index_url is not None else "codeflux's own installation"




@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFacts:
    """The task as the pipeline sees it: the requirement, the approved plan revision, the worktree."""

    task_id: TaskId
    requirement: str
    plan: Plan
    plan_revision: int
    plan_sha256: str
    worktree: TaskWorktree


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckCommandRun:
    """A check command as the worker ran it — or why it did not run (``refusal`` set, nothing ran).

    ``state`` is the stored execution state (``succeeded``, ``failed``, ``timed-out``…) or ``not-run``.
    """

    request_id: str | None
    state: str
    exit_code: int | None
    stdout: str
    stderr: str
    refusal: str | None = None

    @property
    def ran(self) -> bool:
        return self.refusal is None


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptanceRecord:
    """The person's decision on the reviewed diff: ``accepted`` and whether the change ``landed``."""

    diff_identity: str
    accepted: bool
    landed: bool
    decided_by: str


class LedgerPort(Protocol):
    """Writes and reads the attempt's stage ledger (the task service)."""

    def record_stage_verdicts(
        self, task_id: TaskId, attempt: int, verdicts: Sequence[StageVerdict], *,
        evidence: Mapping[StageName, Mapping[str, object]] | None = None,
    ) -> tuple[LedgerRow, ...]: ...  # fmt: skip

    def finish_attempt(self, task_id: TaskId, attempt: int, *, stopped_at: StageName | None) -> tuple[LedgerRow, ...]:
        ...

    def ledger(self, task_id: TaskId, attempt: int) -> list[LedgerRow]: ...


class ObligationPort(Protocol):
    """Records and reads the attempt's obligations (the task service; :mod:`codeflux.domain.pipeline.obligations`)."""

    def record_obligations(self, task_id: TaskId, attempt: int, obligations: Sequence[NewObligation]
                           ) -> tuple[ObligationRecord, ...]: ...

    def change_obligations(self, task_id: TaskId, attempt: int, changes: Sequence[ObligationChange]
                           ) -> tuple[ObligationRecord, ...]: ...

    def obligations(self, task_id: TaskId, attempt: int, kind: ObligationKind | None = None
                    ) -> tuple[ObligationRecord, ...]: ...


class CheckCommandPort(Protocol):
    """Runs one check command in the task's worker, through the authority engine (never prompting);
    ``working_directory`` is where it starts — ``$TMPDIR/<path>``, the base run's or the build's copy under the
    task's TMPDIR (see :func:`~codeflux.domain.operations.normalize_working_directory`) — else the worktree root.

    A command started elsewhere than the root, or one ``covered_by`` another check's argv (the import check
    runs the test command's interpreter), is decided by the decision on that check (``covered_by``, else the
    same argv) in the root this attempt, and is not run when that was not allowed — unless ``own_decision``:
    then it is decided on its own, like the test command (the check tools' install in its TMPDIR folder)."""

    def run_check_command(self, task_id: TaskId, argv: tuple[str, ...], *, attempt: int,
                          working_directory: str | None = None,
                          covered_by: tuple[str, ...] | None = None, own_decision: bool = False
                          ) -> CheckCommandRun: ...

    def temp_directory(self, task_id: TaskId) -> Path:
        """The host path of the task's ``TMPDIR`` in the worker (where check reports and the scratch copies are
        written, outside the worktree so they never enter the diff; it may not exist yet)."""
        ...

    def tools_directory(self) -> Path:
        """The host path of codeflux's check-tool overlays (``<data>/tools``, shown read-only in every box;
        :mod:`codeflux.pipeline.tool_overlay`)."""
        ...

    def tool_source(self) -> ToolSource | None:
        """Where a missing check tool may be installed from (a coordinator option; see :class:`ToolSource`)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RecalledAtom:
    """A verified atom memory holds for this repository (stage 6): its entry, name, file, contract hash and commit,
    and whether it may be used now — ``reason`` says why not (the applicability check's verdict)."""

    entry_id: str
    qualified_name: str
    path: str
    contract_hash: str
    learned_at_commit: str
    usable: bool
    reason: str


class MemoryPort(Protocol):
    """Asks memory about the person's checkout (the coordinator's recall: search proposes, the applicability check
    disposes, an entry whose evidence stopped holding is quarantined on the way): verified atoms (stage 6), and the
    tests that cover the files a task changes (phase B's coverage run)."""

    def recall_atoms(self, name: str) -> tuple[RecalledAtom, ...]: ...

    def covering_tests(self, changed: Sequence[ChangedFile], base_commit: str) -> CoveringTests:
        """The tests to measure ``changed`` with, from file-test maps judged at ``base_commit`` (the task's base
        revision) — or the whole test command and why (:mod:`codeflux.domain.covering_tests`)."""
        ...


class AcceptancePort(Protocol):
    """Reads the person's decision on the task's diff, if any."""

    def acceptance_of(self, task_id: TaskId) -> AcceptanceRecord | None: ...


class SettingsPort(Protocol):
    """Reads one stored setting's value (a JSON object) and revision; None when it was never set."""

    def read_setting(self, key: str) -> tuple[Mapping[str, object], int] | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PipelinePorts:
    """Everything :func:`~codeflux.pipeline.runner.run_pipeline` needs besides the task id and attempt.

    ``repository_root`` is the user's checkout (where a ``.venv`` usually lives); ``search_path`` is the
    worker's ``PATH``, where the interpreter is looked up when the repository has no environment.
    ``settings`` reads the stages' thresholds (:mod:`~codeflux.pipeline.thresholds`); without it every threshold
    is its default, and the evidence says so. ``obligations`` records what phases C and D find the change owes
    (:class:`ObligationPort`); without it stages 18 and 22 are ``blocked`` saying so. ``memory`` is what stage 6
    recall asks (:class:`MemoryPort`); without it stage 6 is ``blocked`` saying so.
    """

    facts: TaskFacts
    ledger: LedgerPort
    commands: CheckCommandPort
    acceptance: AcceptancePort
    repository_root: Path
    search_path: str
    settings: SettingsPort | None = None
    obligations: ObligationPort | None = None
    memory: MemoryPort | None = None
