"""Recovery of an interrupted task: what is known, what is ambiguous, what we recommend — kept apart.

After codeflux stopped while a task was working (planning, running, waiting for a decision, validating),
the task is ``recovery-required`` and shown as three separate things (ARCHITECTURE §1.6, §7):

* **known** (:class:`KnownState`) — the last durable facts: the state it was interrupted in, the plan
  revision and whether it was approved, the run attempt and its last ledger stage, the worktree's
  condition (HEAD against the base) and the identity of its current diff, and whether that exact diff
  is stored as a patch;
* **ambiguous** (:class:`AmbiguousEffect`) — every tool execution and model call whose completion is
  unknown. codeflux never runs one again; the person records whether it happened
  (:class:`EffectOutcome`), once, before anything else proceeds;
* **recommended** (:class:`RecoveryRecommendation`) — one of :class:`RecoveryAction`, chosen by
  :func:`classify_recovery`, with the actions allowed now and why the others are not.

The rules (pure; the order decides):

1. While any ambiguous effect is unresolved, *no* recovery action is allowed; the recommendation still
   names what to do once they are recorded.
2. A task that had started but whose worktree is missing or fails verification cannot continue:
   abandon (a stored patch, if any, is kept).
3. A tool execution the person says *happened* may have changed the worktree in ways no result row
   shows: reconcile (accept the worktree as it is now as the new known state) rather than resume.
4. Otherwise the task can safely resume from where it was (through the ordinary resume afterwards).

Preserving the patch is allowed whenever the worktree holds a diff not already stored; abandoning is
allowed whenever nothing is unresolved.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import assert_never

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.tasks import TaskState

__all__ = [
    "INTERRUPTIBLE_STATES",
    "AmbiguousEffect",
    "EffectKind",
    "EffectOutcome",
    "KnownState",
    "RecoveryAction",
    "RecoveryRecommendation",
    "WorktreeCondition",
    "classify_recovery",
    "is_interrupted",
    "unresolved_effects",
]

INTERRUPTIBLE_STATES = frozenset(
    {TaskState.FORECASTING, TaskState.RUNNING, TaskState.AWAITING_AUTHORITY, TaskState.VALIDATING}
)
"""States in which work was in progress inside a codeflux process: a stop interrupts it."""


def is_interrupted(state: TaskState) -> bool:
    """True when a task found in ``state`` with no process working on it was interrupted."""
    return state in INTERRUPTIBLE_STATES


class RecoveryAction(StrEnum):
    """What a person may do with a task that needs recovery (recording an outcome is separate)."""

    SAFE_RESUME = "safe-resume"
    RECONCILE = "reconcile"
    PRESERVE_PATCH = "preserve-patch"
    ABANDON = "abandon"


class EffectKind(StrEnum):
    TOOL_EXECUTION = "tool-execution"
    MODEL_REQUEST = "model-request"


class EffectOutcome(StrEnum):
    """What the person says happened to an ambiguous effect."""

    HAPPENED = "happened"
    DID_NOT_HAPPEN = "did-not-happen"


class WorktreeCondition(StrEnum):
    NOT_CREATED = "not-created"  # the task never started a run: no worktree is expected
    MISSING = "missing"  # it started, but the worktree directory is gone
    UNUSABLE = "unusable"  # the worktree fails verification (moved, foreign, off its branch or base)
    AT_BASE = "at-base"  # the worktree holds no change against its base
    CHANGED = "changed"  # the worktree holds a diff against its base


@dataclass(frozen=True, slots=True, kw_only=True)
class AmbiguousEffect:
    """An effect whose completion is unknown: ``item_id`` is the execution or model request id."""

    item_id: str
    kind: EffectKind
    summary: str
    outcome: EffectOutcome | None

    def __post_init__(self) -> None:
        if not self.item_id or not self.summary:
            raise InvalidValueError(kind="ambiguous effect", reason="needs an item id and a summary")

    @property
    def is_resolved(self) -> bool:
        return self.outcome is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownState:
    """The last durable facts about an interrupted task (None where nothing was recorded yet)."""

    interrupted_in: TaskState
    plan_revision: int | None
    plan_approved: bool
    attempt: int | None
    last_stage: str | None
    worktree: WorktreeCondition
    base: str | None
    head: str | None
    diff_identity: str | None
    patch_stored: bool

    def __post_init__(self) -> None:
        has_diff = self.worktree in (WorktreeCondition.AT_BASE, WorktreeCondition.CHANGED)
        if has_diff != (self.diff_identity is not None):
            raise InvalidValueError(kind="known state", reason="a diff identity exactly when the worktree is usable")
        if self.worktree is not WorktreeCondition.NOT_CREATED and self.base is None:
            raise InvalidValueError(kind="known state", reason="a started task has a base commit")


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveryRecommendation:
    """The recommended action, the actions allowed now, and the reason each other action is not."""

    recommended: RecoveryAction
    why: str
    allowed: frozenset[RecoveryAction]
    refused: tuple[tuple[RecoveryAction, str], ...]
    unresolved: tuple[str, ...]


def unresolved_effects(effects: Iterable[AmbiguousEffect]) -> tuple[str, ...]:
    """The item ids of effects whose outcome nobody has recorded yet, in the given order."""
    return tuple(effect.item_id for effect in effects if not effect.is_resolved)


def _choose(known: KnownState, effects: tuple[AmbiguousEffect, ...]) -> tuple[RecoveryAction, str]:
    match known.worktree:
        case WorktreeCondition.MISSING | WorktreeCondition.UNUSABLE:
            kept = "; its stored patch stays" if known.patch_stored else ""
            return RecoveryAction.ABANDON, f"the worktree is {known.worktree.value}, so the work cannot go on{kept}"
        case WorktreeCondition.NOT_CREATED | WorktreeCondition.AT_BASE | WorktreeCondition.CHANGED:
            pass
        case _:
            assert_never(known.worktree)
    happened = [e.item_id for e in effects
                if e.kind is EffectKind.TOOL_EXECUTION and e.outcome is EffectOutcome.HAPPENED]
    if happened:
        return RecoveryAction.RECONCILE, (f"{', '.join(happened)} happened without a recorded result; take the "
                                          "worktree as it is now before going on")
    return RecoveryAction.SAFE_RESUME, f"nothing is unaccounted for; go on from {known.interrupted_in.value}"


def _refusal(action: RecoveryAction, known: KnownState, unresolved: tuple[str, ...]) -> str | None:
    if unresolved:
        return f"record what happened to {', '.join(unresolved)} first"
    usable = known.worktree not in (WorktreeCondition.MISSING, WorktreeCondition.UNUSABLE)
    match action:
        case RecoveryAction.SAFE_RESUME | RecoveryAction.RECONCILE:
            return None if usable else f"the worktree is {known.worktree.value}"
        case RecoveryAction.PRESERVE_PATCH:
            if known.worktree is not WorktreeCondition.CHANGED:
                return "the worktree holds no diff to keep"
            return "its diff is already stored" if known.patch_stored else None
        case RecoveryAction.ABANDON:
            return None
        case _:
            assert_never(action)


_STORE_DAMAGE_REFUSAL = "the database lost committed data, so what the task did since is unknown"


def classify_recovery(known: KnownState, effects: Iterable[AmbiguousEffect], *,
                      store_damaged: bool = False) -> RecoveryRecommendation:
    """The recommendation for a task interrupted with ``known`` facts and ``effects`` (see the rules).

    ``store_damaged`` (the database lost committed data, see ``docs/storage.md`` "WAL damage") makes the
    task's recent past unknown: safe-resume is refused and the recommendation is to inspect the worktree and
    reconcile (or abandon, when the worktree cannot be used).
    """
    listed = tuple(effects)
    unresolved = unresolved_effects(listed)
    recommended, why = _choose(known, listed)
    if store_damaged and recommended is not RecoveryAction.ABANDON:
        recommended, why = RecoveryAction.RECONCILE, (
            f"{_STORE_DAMAGE_REFUSAL}: inspect the worktree (`codeflux task diff`), then reconcile to take it "
            "as it is")
    if unresolved:
        why = f"first record what happened to {', '.join(unresolved)}; then: {why}"
    allowed: set[RecoveryAction] = set()
    refused: list[tuple[RecoveryAction, str]] = []
    for action in RecoveryAction:
        reason = _refusal(action, known, unresolved)
        if reason is None and store_damaged and action is RecoveryAction.SAFE_RESUME:
            reason = _STORE_DAMAGE_REFUSAL
        if reason is None:
            allowed.add(action)
        else:
            refused.append((action, reason))
    if recommended is RecoveryAction.SAFE_RESUME and known.worktree is WorktreeCondition.CHANGED \
            and not known.patch_stored and not unresolved:
        why += " (you may preserve the patch first)"
    return RecoveryRecommendation(recommended=recommended, why=why, allowed=frozenset(allowed),
                                  refused=tuple(refused), unresolved=unresolved)
