"""``RecoveryService``: interrupted tasks as known / ambiguous / recommended, and the person's choices.

* ``ListRecovery`` — every ``recovery-required`` task (or only ``task_id``'s), observed now, and every other
  open task whose recent past the database lost (a damaged write-ahead log; an ambiguous item of kind
  ``store-damage`` whose outcome is ``unknown`` and cannot be recorded),
  (:meth:`codeflux.coordinator.tasks.recovery.RecoveryService.tasks_needing_recovery`): the known facts as
  lines (as ``codeflux task recovery`` prints them), each ambiguous effect with its recorded outcome (empty
  while unresolved), the recommended action and why, the actions allowed now and why each other one is not.
  With them, ``landings``: the interrupted accept landings a retry or startup recovery finished or rolled back
  (only ``task_id``'s when set), most recent first, at most ``landings_limit`` (default 20, at most 200), and
  ``landings_more``: how many more are recorded — read from the accept journal, so a later command says what
  an earlier command's recovery did.
* ``RecordOutcome`` — whether an ambiguous effect happened (``happened`` / ``did-not-happen``); the effect
  itself never runs again.
* ``TakeAction`` — ``safe-resume``, ``reconcile``, ``preserve-patch`` or ``abandon``, as ``codeflux task
  recover`` takes them; refused (FAILED_PRECONDITION, with the reason) while an effect is unresolved or
  when the assessment refuses that action. Any other action is INVALID_ARGUMENT; a non-zero
  ``expected_revision`` other than the task's is ABORTED (STALE_REVISION).
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.tasks.landings import PastResolution
from codeflux.coordinator.tasks.recovery import RecoveryService as CoordinatorRecovery
from codeflux.coordinator.tasks.recovery import RecoveryView
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.recovery import EffectOutcome, KnownState, RecoveryAction
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import MutationLedger, check_expected_revision, mutation_of, parse_task_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.views import task_service

__all__ = ["STORE_DAMAGE_KIND", "known_lines", "landing_resolution_view", "methods", "recovery_view"]

_SERVICE: Final = "RecoveryService"
_MAX_ITEM: Final = 128
_MAX_NOTE: Final = 2048


def known_lines(known: KnownState) -> list[str]:
    """What is known about an interrupted task, one fact a line (as ``codeflux task recovery`` prints it)."""
    plan = "none" if known.plan_revision is None else (
        f"revision {known.plan_revision} ({'approved' if known.plan_approved else 'not approved'})")
    lines = [f"interrupted while {known.interrupted_in}", f"plan: {plan}",
             f"attempt: {known.attempt or 'none'}; last ledger stage: {known.last_stage or 'none'}"]
    head = f" (HEAD {known.head[:12]} over base {known.base[:12]})" if known.head and known.base else ""
    lines.append(f"worktree: {known.worktree}{head}")
    if known.diff_identity is not None:
        lines.append(f"diff: {known.diff_identity}" + (" (stored as a patch)" if known.patch_stored else ""))
    return lines


def recovery_view(view: RecoveryView) -> pb.RecoveryView:
    """The protobuf view of one task's recovery assessment, observed now."""
    advice = view.recommendation
    lines = known_lines(view.known)
    if view.last_checkpoint is not None:
        lines.append(f"last checkpoint: {view.last_checkpoint.sequence} ({view.last_checkpoint.trigger})")
    return pb.RecoveryView(
        task_id=view.task.task_id.value, title=view.task.title or "", state=view.task.state.value, known=lines,
        ambiguous=[pb.AmbiguousEffectView(item_id=e.item_id, kind=e.kind.value, summary=e.summary,
                                          outcome="" if e.outcome is None else e.outcome.value)
                   for e in view.ambiguous] + _store_damage_effects(view),
        recommended=advice.recommended.value, why=advice.why,
        allowed=sorted(action.value for action in advice.allowed),
        refused=[pb.RefusedAction(action=action.value, reason=reason) for action, reason in advice.refused],
        revision=view.task.revision)


STORE_DAMAGE_KIND: Final = "store-damage"
_DEFAULT_LANDINGS: Final = 20
_MAX_LANDINGS: Final = 200


def landing_resolution_view(resolved: PastResolution) -> pb.LandingResolutionView:
    """One interrupted accept landing a retry or startup recovery resolved, as recorded."""
    return pb.LandingResolutionView(
        task_id=resolved.task_id.value, landing_id=resolved.landing_id, resolution=resolved.resolution.value,
        by=resolved.by.value, branch=resolved.branch, landed_head=resolved.landed_head,
        previous_head=resolved.previous_head, reason=resolved.reason, resolved_at_us=resolved.resolved_at_us,
        started_at_us=resolved.started_at_us)


def _store_damage_effects(view: RecoveryView) -> list[pb.AmbiguousEffectView]:
    """The database's loss of committed data as one ambiguous item: no outcome can be recorded for it (its
    outcome reads ``unknown``); the person inspects the worktree and acts on the task instead."""
    if view.store_damage is None:
        return []
    return [pb.AmbiguousEffectView(item_id="database", kind=STORE_DAMAGE_KIND, summary=view.store_damage,
                                   outcome="unknown")]


def _outcome(text: str) -> EffectOutcome:
    try:
        return EffectOutcome(text)
    except ValueError:
        raise InvalidValueError(kind="outcome", reason="outcome is happened or did-not-happen") from None


def _action(text: str) -> RecoveryAction:
    try:
        return RecoveryAction(text)
    except ValueError:
        names = ", ".join(a.value for a in RecoveryAction)
        raise InvalidValueError(kind="recovery action", reason=f"action is one of {names}") from None


def _record_outcome(app: CoordinatorApp, ledger: MutationLedger, ctx: CallContext,
                    request: pb.RecordOutcomeRequest) -> pb.RecoveryView:
    mutation = mutation_of(ctx, "RecordOutcome", request.control)
    task_id = parse_task_id(request.task_id)
    outcome = _outcome(request.outcome)
    if not request.item_id or len(request.item_id) > _MAX_ITEM:
        raise InvalidValueError(kind="effect", reason="item_id names the ambiguous effect (exe_… or mreq_…)")
    if len(request.note) > _MAX_NOTE:
        raise InvalidValueError(kind="outcome note", reason=f"at most {_MAX_NOTE} characters")

    def work() -> pb.RecoveryView:
        return recovery_view(CoordinatorRecovery(app.db).record_outcome(
            task_id, item_id=request.item_id, outcome=outcome, note=request.note or None))

    return ledger.run(mutation, request, pb.RecoveryView, work)


def take_action(app: CoordinatorApp, task_id: TaskId, action: RecoveryAction) -> pb.RecoveryView:
    """Take ``action`` on the task (as ``codeflux task recover`` does) and return its view afterwards."""
    recovery = CoordinatorRecovery(app.db)
    match action:
        case RecoveryAction.SAFE_RESUME:
            recovery.safe_resume(task_id)
        case RecoveryAction.RECONCILE:
            recovery.reconcile(task_id)
        case RecoveryAction.PRESERVE_PATCH:
            recovery.preserve_patch(task_id)
        case RecoveryAction.ABANDON:
            recovery.abandon(task_id)
    return recovery_view(recovery.assess(task_id))


def _take_action(app: CoordinatorApp, ledger: MutationLedger, ctx: CallContext,
                 request: pb.RecoveryActionRequest) -> pb.RecoveryView:
    mutation = mutation_of(ctx, "TakeAction", request.control)
    task_id = parse_task_id(request.task_id)
    action = _action(request.action)

    def work() -> pb.RecoveryView:
        check_expected_revision(task_id, mutation, task_service(app).show(task_id).task.revision)
        return take_action(app, task_id, action)

    return ledger.run(mutation, request, pb.RecoveryView, work)


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def list_recovery(ctx: CallContext, request: pb.ListRecoveryRequest) -> pb.ListRecoveryReply:
        recovery = CoordinatorRecovery(app.db)
        if request.task_id:
            task_id = parse_task_id(request.task_id)
            task_service(app).show(task_id)  # an unknown task is NOT_FOUND
            views = [recovery.assess(task_id)] if recovery.needs_recovery(task_id) else []
        else:
            views = recovery.tasks_needing_recovery()
        limit = min(request.landings_limit or _DEFAULT_LANDINGS, _MAX_LANDINGS)
        resolved, total = recovery.landing_resolutions(
            task_id=parse_task_id(request.task_id) if request.task_id else None, limit=limit)
        return pb.ListRecoveryReply(tasks=[recovery_view(view) for view in views],
                                    landings=[landing_resolution_view(r) for r in resolved],
                                    landings_more=max(0, total - len(resolved)))

    def record_outcome(ctx: CallContext, request: pb.RecordOutcomeRequest) -> pb.RecoveryView:
        return _record_outcome(app, ledger, ctx, request)

    def take(ctx: CallContext, request: pb.RecoveryActionRequest) -> pb.RecoveryView:
        return _take_action(app, ledger, ctx, request)

    return [
        UnaryMethod(name=method_name(_SERVICE, "ListRecovery"), request_type=pb.ListRecoveryRequest,
                    response_type=pb.ListRecoveryReply, handler=list_recovery),
        UnaryMethod(name=method_name(_SERVICE, "RecordOutcome"), request_type=pb.RecordOutcomeRequest,
                    response_type=pb.RecoveryView, handler=record_outcome, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "TakeAction"), request_type=pb.RecoveryActionRequest,
                    response_type=pb.RecoveryView, handler=take, mutating=True),
    ]
