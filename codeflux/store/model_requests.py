"""SQL of model requests: the intent of each model call, committed before the provider is contacted.

A request moves forward only (``planned → in-flight | failed``; ``in-flight → succeeded | failed |
outcome-unknown``) — the migration's trigger refuses anything else — and keeps the usage the provider
reported (NULL = not reported) and its cost (NULL = unknown, with the reason). Rows leave through one
decoder (``_request_row``) with the state and error kind as their enums; an unknown stored value raises
:class:`StoredValueUnknownError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.errors import NotFoundError
from codeflux.domain.ids import TaskId
from codeflux.domain.model_calls import ModelCallErrorKind, ModelRequestState
from codeflux.domain.money import Currency
from codeflux.domain.pricing import TokenUsage
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice, decode_optional_choice

__all__ = [
    "ModelRequestEnd",
    "ModelRequestPlan",
    "ModelRequestRow",
    "insert_model_request",
    "mark_model_request_in_flight",
    "model_request_by_key",
    "read_model_request",
    "record_model_request_end",
    "rungs_used_by_task",
    "unfinished_model_requests",
]

_REQUEST = ("id, task_id, idempotency_key, request_sha256, provider, base_url, model, rung, state, price_snapshot_id,"
            " currency, reserved_minor, reserved_reason, reserved_tokens, max_output_tokens, input_tokens,"
            " output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_minor, cost_reason,"
            " stop_reason, provider_request_id, error_kind, error_message, planned_at_us, started_at_us,"
            " finished_at_us, cache_write_1h_tokens")


def _int(value: object) -> int:
    return int(str(value))


def _maybe_int(value: object) -> int | None:
    return None if value is None else int(str(value))


def _maybe_text(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequestPlan:
    """What the gateway records before it contacts a provider."""

    request_id: str
    task_id: TaskId
    idempotency_key: str
    request_sha256: str
    provider: str
    base_url: str | None
    model: str
    rung: str
    price_snapshot_id: int | None
    currency: Currency
    reserved_minor: int | None
    reserved_reason: str | None
    reserved_tokens: int
    max_output_tokens: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequestEnd:
    """How a request ended: its state, the usage reported (None = unknown) and the cost (None = unknown)."""

    state: ModelRequestState
    usage: TokenUsage
    cost_minor: int | None
    cost_reason: str | None
    stop_reason: str | None = None
    provider_request_id: str | None = None
    error_kind: ModelCallErrorKind | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequestRow:
    plan: ModelRequestPlan
    state: ModelRequestState
    end: ModelRequestEnd | None
    planned_at_us: int
    started_at_us: int | None
    finished_at_us: int | None

    @property
    def request_id(self) -> str:
        return self.plan.request_id


def _request_row(row: Row) -> ModelRequestRow:
    plan = ModelRequestPlan(
        request_id=str(row[0]), task_id=TaskId.parse(str(row[1])), idempotency_key=str(row[2]),
        request_sha256=str(row[3]), provider=str(row[4]), base_url=_maybe_text(row[5]), model=str(row[6]),
        rung=str(row[7]), price_snapshot_id=_maybe_int(row[9]), currency=Currency.parse(str(row[10])),
        reserved_minor=_maybe_int(row[11]), reserved_reason=_maybe_text(row[12]), reserved_tokens=_int(row[13]),
        max_output_tokens=_int(row[14]),
    )
    state = decode_choice(ModelRequestState, row[8], kind="model request state")
    end = None
    if state.is_finished():
        usage = TokenUsage(input_tokens=_maybe_int(row[15]), output_tokens=_maybe_int(row[16]),
                           cache_read_tokens=_maybe_int(row[17]), cache_write_tokens=_maybe_int(row[18]),
                           reasoning_tokens=_maybe_int(row[19]), cache_write_1h_tokens=_maybe_int(row[29]))
        end = ModelRequestEnd(state=state, usage=usage, cost_minor=_maybe_int(row[20]),
                              cost_reason=_maybe_text(row[21]), stop_reason=_maybe_text(row[22]),
                              provider_request_id=_maybe_text(row[23]),
                              error_kind=decode_optional_choice(ModelCallErrorKind, row[24],
                                                                kind="model call error kind"),
                              error_message=_maybe_text(row[25]))
    return ModelRequestRow(plan=plan, state=state, end=end, planned_at_us=_int(row[26]),
                           started_at_us=_maybe_int(row[27]), finished_at_us=_maybe_int(row[28]))


def insert_model_request(tx: Transaction, plan: ModelRequestPlan, *, at_us: int) -> ModelRequestRow:
    """Record the intent of a call as ``planned`` (the reservation goes to the ledger separately)."""
    tx.execute(
        "INSERT INTO model_requests (id, task_id, idempotency_key, request_sha256, provider, base_url, model,"
        " rung, state, price_snapshot_id, currency, reserved_minor, reserved_known, reserved_reason, reserved_tokens,"
        " max_output_tokens, planned_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'planned', ?, ?, ?, ?, ?, ?, ?, ?)",
        (plan.request_id, plan.task_id.value, plan.idempotency_key, plan.request_sha256, plan.provider,
         plan.base_url, plan.model, plan.rung, plan.price_snapshot_id, plan.currency.code, plan.reserved_minor,
         int(plan.reserved_minor is not None), plan.reserved_reason, plan.reserved_tokens, plan.max_output_tokens,
         at_us),
    )
    # the row is exactly what was written (STRICT columns keep every value as given): not read back
    return ModelRequestRow(plan=plan, state=ModelRequestState.PLANNED, end=None, planned_at_us=at_us,
                           started_at_us=None, finished_at_us=None)


def read_model_request(view: ReadView, request_id: str) -> ModelRequestRow:
    row = view.query_one(f"SELECT {_REQUEST} FROM model_requests WHERE id = ?", (request_id,))  # noqa: S608
    if row is None:
        raise NotFoundError(kind="model request", entity_id=request_id)
    return _request_row(row)


def model_request_by_key(view: ReadView, *, task_id: TaskId, idempotency_key: str) -> ModelRequestRow | None:
    row = view.query_one(
        f"SELECT {_REQUEST} FROM model_requests WHERE task_id = ? AND idempotency_key = ?",  # noqa: S608
        (task_id.value, idempotency_key),
    )
    return None if row is None else _request_row(row)


def latest_provider_of_task(view: ReadView, task_id: TaskId) -> tuple[str, str] | None:
    """The (provider, model) of the task's newest model request, or None when it made none."""
    row = view.query_one("SELECT provider, model FROM model_requests WHERE task_id = ? "
                         "ORDER BY planned_at_us DESC, id DESC LIMIT 1", (task_id.value,))
    return None if row is None else (str(row[0]), str(row[1]))


def rungs_used_by_task(view: ReadView, task_id: TaskId) -> list[str]:
    """Every ladder rung a model request of ``task_id`` was made on (each once)."""
    rows = view.query_all("SELECT DISTINCT rung FROM model_requests WHERE task_id = ? ORDER BY rung", (task_id.value,))
    return [str(row[0]) for row in rows]


def mark_model_request_in_flight(tx: Transaction, *, request_id: str, at_us: int) -> None:
    """``planned`` → ``in-flight``, committed right before the provider is contacted."""
    rows = tx.execute(
        "UPDATE model_requests SET state = 'in-flight', started_at_us = ? WHERE id = ? AND state = 'planned'"
        " RETURNING id",
        (at_us, request_id),
    )
    if not rows:
        raise NotFoundError(kind="planned model request", entity_id=request_id)


def record_model_request_end(tx: Transaction, *, request_id: str, end: ModelRequestEnd, at_us: int) -> None:
    """Store how the request ended; the forward-only trigger refuses a second end. Nothing is read back (every
    model call ends here, and no caller needs the row: :func:`read_model_request` reads it)."""
    usage = end.usage
    rows = tx.execute(
        "UPDATE model_requests SET state = ?, input_tokens = ?, output_tokens = ?, cache_read_tokens = ?,"
        " cache_write_tokens = ?, cache_write_1h_tokens = ?, reasoning_tokens = ?, cost_minor = ?, cost_known = ?,"
        " cost_reason = ?, stop_reason = ?, provider_request_id = ?, error_kind = ?, error_message = ?,"
        " finished_at_us = max(?, planned_at_us, coalesce(started_at_us, 0))"
        " WHERE id = ? RETURNING id",
        (end.state.value, usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
         usage.cache_write_1h_tokens, usage.reasoning_tokens, end.cost_minor, int(end.cost_minor is not None),
         end.cost_reason, end.stop_reason, end.provider_request_id,
         None if end.error_kind is None else end.error_kind.value, end.error_message, at_us, request_id),
    )
    if not rows:
        raise NotFoundError(kind="model request", entity_id=request_id)


def unfinished_model_requests(view: ReadView) -> list[ModelRequestRow]:
    """Every request left ``planned`` or ``in-flight``, oldest first."""
    rows = view.query_all(
        f"SELECT {_REQUEST} FROM model_requests WHERE state IN ('planned', 'in-flight')"  # noqa: S608
        " ORDER BY planned_at_us, id"
    )
    return [_request_row(row) for row in rows]
