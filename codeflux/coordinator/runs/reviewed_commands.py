"""Reviewed commands: what a person allowed is remembered, and the approval card's "allowed before" is read back
from memory.

* **Remember** (:func:`remember_reviewed_operation`, called by
  :meth:`~codeflux.coordinator.runs.tool_driver.ToolDriver.decide` after the decision committed): when a *person*
  answers a pending request with ``allow-once``, ``allow-for-task`` or ``allow-for-repository``, one
  ``reviewed-command`` memory entry records the exact operation (the tool and its arguments; a command's argv),
  its task identity (``op_…``) and repository identity (``rop_…``), how it was allowed, and the decision and task
  it came from (evidence), bound to the task's repository checkout as it is now (root commit, toolchain,
  dependency hash). The headless policy's answers, automatic decisions and allowances derived from an earlier
  decision are not a person's review and are never remembered. Writing memory is a second transaction: the
  decision never fails because memory could not be written (a safe log line says so and the decision stands).
* **Allowed before** (:func:`allowed_before`): candidates come from :func:`~codeflux.memory.recall.recall` (FTS5
  over the entry text: the program, its arguments and the repository identity), kind ``reviewed-command``, on the
  task's repository checkout; every candidate passes the applicability check now (an entry learned with another
  dependency set or toolchain, or quarantined, is refused with its reason and never shown), and only entries whose
  recorded repository identity *equals* the pending request's are kept — a similar command with other arguments
  is another identity and never shows. Each is shown as (task, date, how it was allowed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.authority.decide import UserDecision
from codeflux.authority.records import RequestView
from codeflux.authority.repository_approvals import RepositoryApprovals, RepositoryCardFacts
from codeflux.domain.authority import Decider, DecisionOutcome
from codeflux.domain.display import argument_display_text
from codeflux.domain.errors import GitOperationFailedError, RepositoryNotUsableError
from codeflux.domain.ids import TaskId
from codeflux.domain.memory import MAX_ENTRY_TEXT_CHARS, ApplicabilityReason, MemoryKind
from codeflux.domain.operations import Operation
from codeflux.domain.repository_approvals import (
    EarlierAllowance,
    RepositoryOperationIdentity,
    derive_repository_operation_identity,
)
from codeflux.domain.tools import ArgumentValue
from codeflux.logs import get_logger
from codeflux.memory.learn import learn_reviewed_command
from codeflux.memory.recall import RecallContext, recall
from codeflux.store import authority as authority_rows
from codeflux.store import repository_approvals as repository_rows
from codeflux.store.database import Database, ReadView
from codeflux.store.tasks import require_task

__all__ = [
    "ALLOWED_BEFORE_SHOWN",
    "AllowedBefore",
    "allowed_before",
    "approval_card_facts",
    "remember_reviewed_operation",
    "reviewed_operation_text",
]

ALLOWED_BEFORE_SHOWN: Final = 5
"""At most this many earlier allowances are shown on a card (newest first)."""
_CANDIDATES: Final = 50
_HOW: Final = {
    UserDecision.ALLOW_ONCE: "allowed-once",
    UserDecision.ALLOW_FOR_TASK: "allowed-for-task",
    UserDecision.ALLOW_FOR_REPOSITORY: "allowed-for-repository",
}
_ALLOWING: Final = frozenset({DecisionOutcome.ALLOWED_ONCE, DecisionOutcome.ALLOWED_FOR_TASK})

_log = get_logger("coordinator.reviewed_commands")


def _plain(value: ArgumentValue) -> object:
    return list(value) if isinstance(value, tuple) else value


def reviewed_operation_text(operation: Operation, identity: RepositoryOperationIdentity) -> str:
    """The text a reviewed-command entry is found by: the program and its arguments (a command's argv as
    written), the tool, and the repository identity (whose digest ranks the exact operation first)."""
    arguments = dict(operation.arguments)
    argv = arguments.get("argv") if operation.tool == "run_command" else None
    if isinstance(argv, tuple):
        shown = "command " + " ".join(argv)
    else:
        shown = " ".join([f"tool {operation.tool}",
                          *(f"{name} {argument_display_text(value)}" for name, value in operation.arguments)])
    suffix = f" (tool {operation.tool}, cwd {operation.cwd}, repository operation {identity})"
    return shown[:MAX_ENTRY_TEXT_CHARS - len(suffix)] + suffix


@dataclass(frozen=True, slots=True, kw_only=True)
class _Subject:
    """A request and where its memory lives: the task's repository checkout and the repository identity."""

    operation: Operation
    request_id: str
    repository_root: Path
    identity: RepositoryOperationIdentity


def _subject(view: ReadView, request_id: str) -> _Subject | None:
    request = authority_rows.read_tool_request(view, request_id)
    roots = repository_rows.task_repository_roots(view, request.task_id)
    if roots is None:
        return None  # a task recorded without a repository: nothing to bind memory to
    task = require_task(view, request.task_id)
    return _Subject(operation=request.operation, request_id=request_id, repository_root=task.repository_root,
                    identity=derive_repository_operation_identity(request.operation, roots))


def remember_reviewed_operation(db: Database, decided: RequestView, decision: UserDecision) -> None:
    """Record a person's allowance of ``decided`` as a reviewed-command entry (see the module docstring). Never
    raises: a failure is logged (one safe line) and the decision stands."""
    how = _HOW.get(decision)
    if how is None or decided.decision.decided_by is not Decider.USER or decided.decision.outcome not in _ALLOWING:
        return
    try:
        subject, decided_at_us = db.read(lambda view: (
            _subject(view, decided.request_id),
            authority_rows.latest_decision(view, decided.request_id).decided_at_us))
        if subject is None:
            return
        operation = subject.operation
        learn_reviewed_command(
            db, root=subject.repository_root, text=reviewed_operation_text(operation, subject.identity),
            tool=operation.tool, arguments={name: _plain(value) for name, value in operation.arguments},
            operation_identity=str(decided.identity), repository_identity=str(subject.identity), allowed=how,
            decision_id=decided.decision.decision_id, task_id=decided.task_id.value, request_id=decided.request_id,
            decided_at_us=decided_at_us)
    except Exception as error:  # memory is a convenience: the decision already committed and stands
        _log.warning("reviewed_command.not_remembered", request_id=decided.request_id,
                     decision_id=decided.decision.decision_id, error=type(error).__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class AllowedBefore:
    """What memory says about a pending request: the earlier allowances shown, and why candidates of the same
    repository identity were refused (the applicability check's reasons; never shown as allowed before)."""

    shown: tuple[EarlierAllowance, ...]
    refused: tuple[tuple[ApplicabilityReason, str], ...]


def _allowance(body: object, created_at_us: int) -> EarlierAllowance | None:
    if not isinstance(body, dict):
        return None
    try:
        decided_at = body.get("decided_at_us", created_at_us)
        return EarlierAllowance(task_id=TaskId.parse(str(body["task_id"])), request_id=str(body["request_id"]),
                                decision_id=str(body["decision_id"]), outcome=str(body["allowed"]),
                                decided_at_us=int(decided_at) if isinstance(decided_at, int) else created_at_us)
    except (KeyError, ValueError):
        return None


def allowed_before(db: Database, request_id: str) -> AllowedBefore:
    """The earlier allowances of ``request_id``'s exact repository identity on its repository, from memory (see the
    module docstring), newest first, at most :data:`ALLOWED_BEFORE_SHOWN`."""
    subject = db.read(lambda view: _subject(view, request_id))
    if subject is None:
        return AllowedBefore(shown=(), refused=())
    wanted = str(subject.identity)
    # The digest first: a query keeps only its first words, and it is the word that names exactly this operation.
    query = f"{subject.identity.digest} {reviewed_operation_text(subject.operation, subject.identity)}"
    try:
        found = recall(db, query, RecallContext(root=subject.repository_root, kind=MemoryKind.REVIEWED_COMMAND,
                                                limit=_CANDIDATES))
    except (RepositoryNotUsableError, GitOperationFailedError) as error:
        # The checkout cannot be read now (moved, not a repository any more): nothing can be shown as applicable,
        # and the card still shows the request.
        _log.warning("reviewed_command.not_recalled", request_id=request_id, error=type(error).__name__)
        return AllowedBefore(shown=(), refused=())
    earlier: dict[str, EarlierAllowance] = {}
    for usable in found.usable:
        if usable.entry.body.get("repository_identity") != wanted:
            continue  # similar text, another operation: similarity is not applicability
        allowance = _allowance(dict(usable.entry.body), usable.entry.created_at_us)
        if allowance is not None and allowance.request_id != request_id:
            earlier.setdefault(allowance.decision_id, allowance)
    shown = sorted(earlier.values(), key=lambda a: (a.decided_at_us, a.decision_id), reverse=True)
    refused = tuple((candidate.verdict.reason, candidate.verdict.detail) for candidate in found.refused
                    if wanted in candidate.text)
    return AllowedBefore(shown=tuple(shown[:ALLOWED_BEFORE_SHOWN]), refused=refused)


def approval_card_facts(db: Database, request_id: str, *, unconfined: bool) -> RepositoryCardFacts:
    """What a pending request's card says about its repository: allowed before (from memory), whether
    allow-for-repository is offered and the identity it would bind."""
    earlier = allowed_before(db, request_id)
    not_applicable = sorted({f"{reason}: {detail}" for reason, detail in earlier.refused})
    return RepositoryApprovals(db).card_facts(request_id, unconfined=unconfined, allowed_before=earlier.shown,
                                              not_applicable=not_applicable)
