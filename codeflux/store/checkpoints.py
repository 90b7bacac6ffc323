"""SQL of task checkpoints and delivery decisions (see ``migrations/000006_checkpoints.sql``).

A checkpoint row names the commit preserved on the task's private ref ``refs/codeflux/checkpoints/<task>/<n>``
and the journal event written with it. A delivery row records the person's decision (stages 36
human-acceptance and 37 deliver) on a finished attempt that stopped at human-acceptance; the attempt's
ledger itself is never rewritten. Both tables are facts: no UPDATE, no DELETE.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.domain.tasks import Actor
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice

__all__ = [
    "CHECKPOINT_REF_PREFIX",
    "CheckpointRow",
    "CheckpointTrigger",
    "DeliveryRow",
    "checkpoint_ref_name",
    "checkpoints_of_task",
    "delivery_of_attempt",
    "insert_checkpoint",
    "insert_delivery",
    "latest_checkpoint",
    "next_checkpoint_sequence",
]

CHECKPOINT_REF_PREFIX = "refs/codeflux/checkpoints/"

_CHECKPOINT = ("id, task_id, sequence, trigger_kind, commit_id, ref_name, head_commit, diff_identity, plan_revision,"
               " attempt, event_sequence, created_at_us")
_DELIVERY = ("id, task_id, attempt, decision, diff_identity, human_acceptance, human_acceptance_evaluation, deliver,"
             " deliver_evaluation, landed_commit, reason, decided_by, decided_at_us")


class CheckpointTrigger(StrEnum):
    """Why a checkpoint was taken (ARCHITECTURE §7)."""

    PLAN_APPROVED = "plan-approved"
    MATERIAL_EDIT = "material-edit"
    BEFORE_RISKY_ACTION = "before-risky-action"
    PAUSED = "paused"
    SHUTDOWN = "shutdown"


def checkpoint_ref_name(task_id: TaskId, sequence: int) -> str:
    """The private ref of checkpoint ``sequence`` of the task (not a branch; never checked out)."""
    return f"{CHECKPOINT_REF_PREFIX}{task_id.value}/{sequence}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointRow:
    checkpoint_id: int
    task_id: TaskId
    sequence: int
    trigger: CheckpointTrigger
    commit_id: str
    ref_name: str
    head_commit: str
    diff_identity: str
    plan_revision: int | None
    attempt: int | None
    event_sequence: int
    created_at_us: int


def _checkpoint(row: Row) -> CheckpointRow:
    return CheckpointRow(
        checkpoint_id=int(row[0]), task_id=TaskId.parse(str(row[1])), sequence=int(row[2]),
        trigger=decode_choice(CheckpointTrigger, row[3], kind="checkpoint trigger"), commit_id=str(row[4]),
        ref_name=str(row[5]), head_commit=str(row[6]),
        diff_identity=str(row[7]), plan_revision=None if row[8] is None else int(row[8]),
        attempt=None if row[9] is None else int(row[9]), event_sequence=int(row[10]), created_at_us=int(row[11]))


def next_checkpoint_sequence(view: ReadView, task_id: TaskId) -> int:
    row = view.query_one("SELECT coalesce(max(sequence), 0) + 1 FROM checkpoints WHERE task_id = ?", (task_id.value,))
    return 1 if row is None else int(row[0])


def insert_checkpoint(
    tx: Transaction, *, task_id: TaskId, sequence: int, trigger: CheckpointTrigger, commit_id: str, head_commit: str,
    diff_identity: str, plan_revision: int | None, attempt: int | None, event_sequence: int, at_us: int,
) -> CheckpointRow:  # fmt: skip
    """Record checkpoint ``sequence`` (the schema refuses anything but the task's next sequence)."""
    rows = tx.execute(
        f"INSERT INTO checkpoints ({_CHECKPOINT}) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"  # noqa: S608
        f" RETURNING {_CHECKPOINT}",
        (task_id.value, sequence, CheckpointTrigger(trigger).value, commit_id, checkpoint_ref_name(task_id, sequence),
         head_commit, diff_identity, plan_revision, attempt, event_sequence, at_us),
    )
    return _checkpoint(rows[0])


def checkpoints_of_task(view: ReadView, task_id: TaskId) -> list[CheckpointRow]:
    """Every checkpoint of the task, oldest first."""
    rows = view.query_all(f"SELECT {_CHECKPOINT} FROM checkpoints WHERE task_id = ? ORDER BY sequence",  # noqa: S608
                          (task_id.value,))
    return [_checkpoint(row) for row in rows]


def latest_checkpoint(view: ReadView, task_id: TaskId) -> CheckpointRow | None:
    """The task's newest checkpoint, or None before its first."""
    row = view.query_one(f"SELECT {_CHECKPOINT} FROM checkpoints WHERE task_id = ?"  # noqa: S608
                         " ORDER BY sequence DESC LIMIT 1", (task_id.value,))
    return None if row is None else _checkpoint(row)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryRow:
    """The decision on a finished attempt, as the verdicts of stages 36 and 37."""

    delivery_id: int
    task_id: TaskId
    attempt: int
    accepted: bool
    diff_identity: str
    human_acceptance: StageVerdict
    deliver: StageVerdict
    landed_commit: str | None
    reason: str | None
    decided_by: Actor
    decided_at_us: int


def _decode_accepted(value: object) -> bool:
    match str(value):
        case "accepted":
            return True
        case "rejected":
            return False
        case other:
            raise StoredValueUnknownError(kind="delivery decision", value=other)


def _delivery(row: Row) -> DeliveryRow:
    deliver_outcome = decode_choice(StageOutcome, row[7], kind="stage outcome")
    blocked = deliver_outcome is StageOutcome.BLOCKED
    return DeliveryRow(
        delivery_id=int(row[0]), task_id=TaskId.parse(str(row[1])), attempt=int(row[2]),
        accepted=_decode_accepted(row[3]), diff_identity=str(row[4]),
        human_acceptance=StageVerdict(stage=StageName.HUMAN_ACCEPTANCE,
                                      outcome=decode_choice(StageOutcome, row[5], kind="stage outcome"),
                                      gate_evaluation=str(row[6])),
        deliver=StageVerdict(stage=StageName.DELIVER, outcome=deliver_outcome,
                             gate_evaluation=None if blocked else str(row[8]),
                             reason="human-acceptance did not hold" if blocked else None),
        landed_commit=None if row[9] is None else str(row[9]), reason=None if row[10] is None else str(row[10]),
        decided_by=decode_choice(Actor, row[11], kind="delivery decider"), decided_at_us=int(row[12]))


def delivery_of_attempt(view: ReadView, task_id: TaskId, attempt: int) -> DeliveryRow | None:
    row = view.query_one(f"SELECT {_DELIVERY} FROM task_deliveries WHERE task_id = ? AND attempt = ?",  # noqa: S608
                         (task_id.value, attempt))
    return None if row is None else _delivery(row)


def insert_delivery(
    tx: Transaction, *, task_id: TaskId, attempt: int, accepted: bool, diff_identity: str,
    human_acceptance: StageVerdict, deliver: StageVerdict, landed_commit: str | None, reason: str | None,
    decided_by: Actor, at_us: int,
) -> DeliveryRow:  # fmt: skip
    """Record the decision on ``attempt`` (the schema refuses an attempt not waiting at human-acceptance)."""
    rows = tx.execute(
        f"INSERT INTO task_deliveries ({_DELIVERY}) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"  # noqa: S608
        f" RETURNING {_DELIVERY}",
        (task_id.value, attempt, "accepted" if accepted else "rejected", diff_identity,
         human_acceptance.outcome.value, human_acceptance.gate_evaluation or human_acceptance.reason or "decided",
         deliver.outcome.value,
         None if deliver.outcome is StageOutcome.BLOCKED else (deliver.gate_evaluation or "decided"),
         landed_commit, reason, decided_by.value, at_us),
    )
    return _delivery(rows[0])
