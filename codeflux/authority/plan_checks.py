"""Plan checks are pre-approved by the plan approval.

Approving a plan revision approves exactly its checks' operations for that task: a ``run_command`` request
whose argv is **exactly** the argv of a check of the task's newest plan revision — every argument, in order —
started in the worktree root, while that revision (and its sha256) is the approved one, is allowed by a
decision derived from the plan approval (:class:`~codeflux.authority.service.DerivedAllowance`): decided by
whoever approved the revision (a person, or the headless policy standing in for one with ``--yes``), with a
reason that names the check, the revision and its sha256.

Nothing else is covered:

* a near miss — one argument more or less, another order, the same command wrapped in ``sh -c`` — is a
  different argv, and asks like any other request;
* another task's plan never covers a request (the plan is read for the request's own task);
* a newer revision covers only its own checks: the allowance is derived afresh for every request from the
  revision approved *now*, and nothing standing is recorded, so nothing outlives the revision it came from;
* a check that needs more than running a program in the task's box (``network``, ``install``, writes
  outside the worktree, …) is not covered: approving a plan is not approving those, and the request asks;
* a request the rules already refuse (a denied capability, an inactive task) stays refused.

**Confinement.** With a box (bubblewrap or Landlock) every matching request of the task is allowed, by any
source: the plan approval stands for the task while its revision is approved. With no box (commands run
unconfined and the person did not opt in), a program may only be allowed once at a time: the plan approval
then covers only codeflux's own runs of the check (source ``pipeline``: the finish step's check and the
pipeline's checks, one request each per run), never the model's own, which asks as any program does
unconfined. In both modes the allowance is recorded as an allow-once approval of that one request —
never a standing approval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from codeflux.authority.classify import Classification
from codeflux.authority.decide import Decider
from codeflux.domain.authority import RequestSource
from codeflux.domain.capabilities import Capability
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import Operation
from codeflux.domain.plans import Plan, PlanDecider
from codeflux.store import plans as plan_rows
from codeflux.store.database import ReadView

__all__ = ["ApprovedPlan", "PlanCheckCover", "approved_plan_checks", "plan_check_cover"]

_COVERED_CAPABILITIES: Final = frozenset({Capability.READ, Capability.TASK_WRITE, Capability.PROCESS})
"""What a plan approval can stand for: running a program in the task's box, reading and writing the worktree."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanCheckCover:
    """The plan approval that covers one request: who approved it and the reason to record."""

    decided_by: Decider
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovedPlan:
    """The task's newest plan revision, when it is the approved one."""

    revision: int
    sha256: str
    plan: Plan
    decided_by: PlanDecider


def approved_plan_checks(view: ReadView, task_id: TaskId) -> ApprovedPlan | None:
    """The task's newest plan revision if a decision approved exactly it (revision and sha256), else None."""
    latest = plan_rows.latest_plan_revision(view, task_id)
    if latest is None:
        return None
    decision = plan_rows.plan_decision(view, task_id, latest.revision)
    if decision is None or not decision.approved or decision.sha256 != latest.sha256:
        return None
    return ApprovedPlan(revision=latest.revision, sha256=latest.sha256, plan=latest.plan,
                        decided_by=decision.decided_by)


def plan_check_cover(view: ReadView, *, operation: Operation, classification: Classification,
                     source: RequestSource, programs_unconfined: bool) -> PlanCheckCover | None:
    """The plan approval that covers ``operation`` (see the module docstring), or None."""
    if operation.tool != "run_command" or operation.cwd != ".":
        return None
    argv = dict(operation.arguments).get("argv")
    if not isinstance(argv, tuple):
        return None
    if any(item.need.capability not in _COVERED_CAPABILITIES for item in classification.needs):
        return None
    if programs_unconfined and source is not RequestSource.PIPELINE:
        return None
    approved = approved_plan_checks(view, operation.task_id)
    if approved is None:
        return None
    check = next((check for check in approved.plan.checks if check.argv == argv), None)
    if check is None:
        return None
    decider = Decider.USER if approved.decided_by is PlanDecider.USER else Decider.HEADLESS_POLICY
    scope = ("once, for this run (commands run unconfined: never standing)" if programs_unconfined
             else "for this task while the revision is approved (confined)")
    reason = (f"check {check.name!r} of plan revision {approved.revision} (sha256 {approved.sha256}), approved by "
              f"{approved.decided_by.value}: the plan approval allows exactly this argv in the worktree root, {scope}")
    return PlanCheckCover(decided_by=decider, reason=reason[:2048])
