"""The authority rules, pure: what is decided about a classified request, a person's answer, an execution.

No I/O: the service (``service.py``) reads the recorded facts — task state, denials, approvals — and
hands them in. The rules, in the order they apply to a new request:

1. A request whose every need is ``read`` is **automatic**, whatever the task's state.
2. A task that is not active (:func:`~codeflux.domain.tasks.is_active_for_tools`) refuses everything
   else: **refused-inactive-task**.
3. A recorded denial of the task that overlaps any need (``network`` overlaps ``network:host`` both
   ways, see :meth:`CapabilityNeed.overlaps`) refuses it without asking: **refused-denied-capability**.
   Denials know nothing of tools, wrappers or working directories, so ``curl``, ``sh -c "curl …"`` and the
   same request from a sub-directory are all refused alike.
4. A request whose every need is automatic (``read``/``task-write`` inside the worktree) is **automatic**.
5. A standing allow-for-task approval of the *exact* operation identity in the same task covers it:
   **allowed-for-task** (decided by the system, naming the approval).
6. Anything else is **pending** until a person (or the headless policy) decides allow-once,
   allow-for-task or deny — unless a derived allowance decides it at once: a plan approval covering a check's
   exact argv (:mod:`codeflux.authority.plan_checks`) or a live repository approval of the exact repository
   identity (:mod:`codeflux.authority.repository_approvals`). Either is recorded as an allow-once decision that
   names what it rests on; rules 2 and 3 have already refused what they refuse, so a denial always wins.

An approval covers exactly one identity; since the identity hashes the task, tool, every argument in
order, cwd, effects and the pinned executable, any other tool, argument, order, argument count, task or
cwd is a different identity and is not covered. Nothing in a request's text can lower its class: the
classifier only ever adds needs, and these rules only read needs.

Before an allowed request runs, :func:`clear_for_execution` re-applies rules 1–3 to the facts *then*
(the task may have paused, a denial may have been recorded since) and checks an allow-once approval is
still unconsumed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import assert_never

from codeflux.authority.classify import Classification
from codeflux.domain.authority import ApprovalScope, Decider, DecisionOutcome
from codeflux.domain.capabilities import Capability, CapabilityNeed, is_automatic_capability
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import OperationIdentity
from codeflux.domain.tasks import TaskState, is_active_for_tools

__all__ = [
    "ApprovalScope",
    "Clearance",
    "Decider",
    "DecisionOutcome",
    "ExecutionRefusal",
    "Ruling",
    "StandingApproval",
    "StandingDenial",
    "UserDecision",
    "UserRuling",
    "approval_covers",
    "clear_for_execution",
    "default_needs_to_deny",
    "find_overlapping_denial",
    "rule_on_request",
    "rule_on_user_decision",
    "runs_a_program",
]


class UserDecision(StrEnum):
    """What a person (or the headless policy) can answer to a pending request."""

    ALLOW_ONCE = "allow-once"
    ALLOW_FOR_TASK = "allow-for-task"
    ALLOW_FOR_REPOSITORY = "allow-for-repository"
    """Allowed for this task *and* recorded as a standing approval of the same operation in every later task of
    the same repository (the repository operation identity, :mod:`codeflux.domain.repository_approvals`)."""
    DENY = "deny"


@dataclass(frozen=True, slots=True, kw_only=True)
class StandingDenial:
    """A recorded denial: ``need`` (a capability, maybe narrowed to a resource) is denied in ``task_id``."""

    denial_id: str
    task_id: TaskId
    need: CapabilityNeed


@dataclass(frozen=True, slots=True, kw_only=True)
class StandingApproval:
    """A recorded approval of exactly ``identity`` in ``task_id``; ``request_id`` is the request decided."""

    approval_id: str
    task_id: TaskId
    identity: OperationIdentity
    scope: ApprovalScope
    request_id: str
    consumed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Ruling:
    """What the rules decided about a new request: the outcome, the needs it covers, and why."""

    outcome: DecisionOutcome
    covered: tuple[CapabilityNeed, ...]
    reason: str
    approval_id: str | None = None
    denial_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UserRuling:
    """A person's answer turned into a decision: the outcome, the approval scope or the needs to deny."""

    outcome: DecisionOutcome
    covered: tuple[CapabilityNeed, ...]
    scope: ApprovalScope | None
    denied: tuple[CapabilityNeed, ...]


class ExecutionRefusal(StrEnum):
    """Why an execution may not start."""

    PENDING = "pending"
    DENIED = "denied"
    DENIED_CAPABILITY = "denied-capability"
    INACTIVE_TASK = "inactive-task"
    APPROVAL_MISSING = "approval-missing"
    APPROVAL_CONSUMED = "approval-consumed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Clearance:
    """The answer of :func:`clear_for_execution`: cleared (``refusal`` is None) or refused, and why."""

    refusal: ExecutionRefusal | None
    denial: StandingDenial | None = None
    need: CapabilityNeed | None = None
    consume_approval: bool = False

    @property
    def cleared(self) -> bool:
        return self.refusal is None


def _is_read_only(needs: Iterable[CapabilityNeed]) -> bool:
    return all(need.capability is Capability.READ for need in needs)


def _asking_needs(classification: Classification) -> tuple[CapabilityNeed, ...]:
    return tuple(item.need for item in classification.needs if not is_automatic_capability(item.need.capability))


def _all_needs(classification: Classification) -> tuple[CapabilityNeed, ...]:
    return tuple(item.need for item in classification.needs)


def find_overlapping_denial(
    needs: Iterable[CapabilityNeed], denials: Iterable[StandingDenial], *, task_id: TaskId
) -> tuple[StandingDenial, CapabilityNeed] | None:
    """The first denial of ``task_id`` that overlaps one of ``needs`` (and that need), or None.

    Automatic needs are never denied; denials of another task never apply.
    """
    listed = [denial for denial in denials if denial.task_id == task_id]
    for need in needs:
        if is_automatic_capability(need.capability):
            continue
        for denial in listed:
            if denial.need.overlaps(need):
                return denial, need
    return None


def approval_covers(approval: StandingApproval, *, task_id: TaskId, identity: OperationIdentity) -> bool:
    """True only when ``approval`` is of the same task and the exact same operation identity."""
    return approval.task_id == task_id and approval.identity == identity


def rule_on_request(
    *,
    task_id: TaskId,
    task_state: TaskState,
    identity: OperationIdentity,
    classification: Classification,
    denials: Iterable[StandingDenial],
    approvals: Iterable[StandingApproval],
    programs_unconfined: bool = False,
) -> Ruling:
    """Decide a newly recorded request (see the module docstring for the order of the rules).

    With ``programs_unconfined`` (no OS box and no opt-in), rule 5 does not apply to a request that runs a
    program: it asks every time.
    """
    needs = _all_needs(classification)
    if _is_read_only(needs):
        return Ruling(outcome=DecisionOutcome.AUTOMATIC, covered=needs,
                      reason="reads inside the task worktree are automatic")
    if not is_active_for_tools(task_state):
        return Ruling(outcome=DecisionOutcome.REFUSED_INACTIVE_TASK, covered=needs,
                      reason=f"the task is {task_state.value}; only reads run while it is not running")
    hit = find_overlapping_denial(needs, denials, task_id=task_id)
    if hit is not None:
        denial, need = hit
        return Ruling(outcome=DecisionOutcome.REFUSED_DENIED_CAPABILITY, covered=(need,),
                      reason=f"{need} is covered by the denial of {denial.need} in this task",
                      denial_id=denial.denial_id)
    if classification.is_automatic():
        return Ruling(outcome=DecisionOutcome.AUTOMATIC, covered=needs,
                      reason="reads and writes inside the task worktree are automatic")
    for approval in () if programs_unconfined and runs_a_program(classification) else approvals:
        if approval.scope is ApprovalScope.ALLOW_FOR_TASK and approval_covers(
            approval, task_id=task_id, identity=identity
        ):
            return Ruling(outcome=DecisionOutcome.ALLOWED_FOR_TASK, covered=needs,
                          reason="the exact operation was allowed for this task",
                          approval_id=approval.approval_id)
    asking = _asking_needs(classification)
    return Ruling(outcome=DecisionOutcome.PENDING, covered=asking,
                  reason="needs " + ", ".join(str(need) for need in asking) + "; a person decides")


def runs_a_program(classification: Classification) -> bool:
    """True if the request needs ``process``: it runs a program, which may run code from the worktree."""
    return any(item.need.capability is Capability.PROCESS for item in classification.needs)


def default_needs_to_deny(classification: Classification) -> tuple[CapabilityNeed, ...]:
    """What a plain "deny" records: every need of the request's most severe non-automatic capability.

    ``curl https://x`` needs ``process`` and ``network:x``; denying it denies ``network:x``, not every
    program. A request that needs only ``process`` denies ``process``: nothing narrower names it.
    """
    asking = _asking_needs(classification)
    if not asking:
        return ()
    worst = asking[-1].capability  # needs are sorted by severity
    return tuple(need for need in asking if need.capability is worst)


def rule_on_user_decision(
    *, decision: UserDecision, classification: Classification, deny: tuple[CapabilityNeed, ...] | None = None
) -> UserRuling:
    """Turn a person's answer to a pending request into a decision.

    ``deny`` chooses what a denial records (default: :func:`default_needs_to_deny`); it may be wider
    than the request (``network`` for a request that needed ``network:host``), never an automatic
    capability. It is refused for allow decisions.
    """
    if decision is not UserDecision.DENY and deny is not None:
        raise InvalidValueError(kind="authority decision", reason="only a denial names capabilities to deny")
    match decision:
        case UserDecision.ALLOW_ONCE:
            return UserRuling(outcome=DecisionOutcome.ALLOWED_ONCE, covered=_all_needs(classification),
                              scope=ApprovalScope.ALLOW_ONCE, denied=())
        case UserDecision.ALLOW_FOR_TASK | UserDecision.ALLOW_FOR_REPOSITORY:
            return UserRuling(outcome=DecisionOutcome.ALLOWED_FOR_TASK, covered=_all_needs(classification),
                              scope=ApprovalScope.ALLOW_FOR_TASK, denied=())
        case UserDecision.DENY:
            chosen = default_needs_to_deny(classification) if deny is None else tuple(sorted(set(deny)))
            if not chosen:
                raise InvalidValueError(kind="authority decision", reason="a denial needs a capability to deny")
            if any(is_automatic_capability(need.capability) for need in chosen):
                raise InvalidValueError(kind="authority decision", reason="read and task-write are never denied")
            return UserRuling(outcome=DecisionOutcome.DENIED, covered=chosen, scope=None, denied=chosen)
        case _:
            assert_never(decision)


def clear_for_execution(
    *,
    task_id: TaskId,
    task_state: TaskState,
    classification: Classification,
    outcome: DecisionOutcome,
    denials: Iterable[StandingDenial],
    approval: StandingApproval | None,
    identity: OperationIdentity,
) -> Clearance:
    """May the request whose current decision is ``outcome`` start now? Re-checks state and denials.

    ``approval`` is the approval the decision rests on (the request's own for allowed-once, the covering
    one for allowed-for-task); an allow-once approval must be unconsumed and is to be consumed with the
    execution intent (``consume_approval``).
    """
    refused = _refusal_of_outcome(outcome)
    if refused is not None:
        return Clearance(refusal=refused)
    needs = _all_needs(classification)
    if _is_read_only(needs):
        return Clearance(refusal=None)
    if not is_active_for_tools(task_state):
        return Clearance(refusal=ExecutionRefusal.INACTIVE_TASK)
    hit = find_overlapping_denial(needs, denials, task_id=task_id)
    if hit is not None:
        return Clearance(refusal=ExecutionRefusal.DENIED_CAPABILITY, denial=hit[0], need=hit[1])
    if outcome is DecisionOutcome.AUTOMATIC:
        if not classification.is_automatic():
            return Clearance(refusal=ExecutionRefusal.APPROVAL_MISSING)
        return Clearance(refusal=None)
    if approval is None or not approval_covers(approval, task_id=task_id, identity=identity):
        return Clearance(refusal=ExecutionRefusal.APPROVAL_MISSING)
    if approval.scope is ApprovalScope.ALLOW_ONCE:
        if approval.consumed:
            return Clearance(refusal=ExecutionRefusal.APPROVAL_CONSUMED)
        return Clearance(refusal=None, consume_approval=True)
    return Clearance(refusal=None)


def _refusal_of_outcome(outcome: DecisionOutcome) -> ExecutionRefusal | None:
    match outcome:
        case DecisionOutcome.PENDING:
            return ExecutionRefusal.PENDING
        case DecisionOutcome.DENIED:
            return ExecutionRefusal.DENIED
        case DecisionOutcome.REFUSED_DENIED_CAPABILITY:
            return ExecutionRefusal.DENIED_CAPABILITY
        case DecisionOutcome.REFUSED_INACTIVE_TASK:
            return ExecutionRefusal.INACTIVE_TASK
        case DecisionOutcome.AUTOMATIC | DecisionOutcome.ALLOWED_ONCE | DecisionOutcome.ALLOWED_FOR_TASK:
            return None
        case _:
            assert_never(outcome)
