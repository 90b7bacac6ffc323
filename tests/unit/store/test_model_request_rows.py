"""Model request rows leave the store with their state and error kind as enums; an unknown stored state or
error kind is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import TaskId
from codeflux.domain.model_calls import ModelCallErrorKind, ModelRequestState
from codeflux.domain.money import USD, Money
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.tasks import TaskState
from codeflux.store import model_requests as rows
from codeflux.store.database import Database, Transaction
from codeflux.store.money import insert_budget
from codeflux.store.tasks import insert_task


def _planned(db: Database, tmp_path: Path) -> rows.ModelRequestRow:
    task_id = TaskId.from_entropy(os.urandom(16))
    request_id = "mreq_" + os.urandom(16).hex()

    def work(tx: Transaction) -> rows.ModelRequestRow:
        insert_task(tx, task_id=task_id, repository_root=tmp_path / "r", worktree=tmp_path / "w",
                    state=TaskState.FORECASTING)
        insert_budget(tx, task_id=task_id, hard_limit=Money(minor=10**6, currency=USD), warning=None,
                      token_limit=None, allow_unknown_price=True, at_us=1)
        return rows.insert_model_request(tx, rows.ModelRequestPlan(
            request_id=request_id, task_id=task_id, idempotency_key=request_id, request_sha256="0" * 64,
            provider="scripted", base_url=None, model="m", rung="cheap:low", price_snapshot_id=None, currency=USD,
            reserved_minor=None, reserved_reason="no price", reserved_tokens=1, max_output_tokens=1,
        ), at_us=1)

    return db.write(work)


def test_a_request_reads_back_with_its_state_and_error_kind(db: Database, tmp_path: Path) -> None:
    planned = _planned(db, tmp_path)
    assert planned.state is ModelRequestState.PLANNED and planned.end is None
    assert db.read(lambda view: rows.read_model_request(view, planned.request_id)) == planned  # as stored

    db.write(lambda tx: rows.mark_model_request_in_flight(tx, request_id=planned.request_id, at_us=2))
    end = rows.ModelRequestEnd(state=ModelRequestState.OUTCOME_UNKNOWN, usage=TokenUsage(), cost_minor=None,
                               cost_reason="may be billed", error_kind=ModelCallErrorKind.INTERRUPTED)
    db.write(lambda tx: rows.record_model_request_end(tx, request_id=planned.request_id, end=end, at_us=3))
    stored = db.read(lambda view: rows.read_model_request(view, planned.request_id))

    assert stored.state is ModelRequestState.OUTCOME_UNKNOWN and stored.end == end
    assert (stored.plan, stored.planned_at_us, stored.started_at_us, stored.finished_at_us) == (planned.plan, 1, 2, 3)
    assert stored.end is not None and stored.end.error_kind is ModelCallErrorKind.INTERRUPTED


@pytest.mark.parametrize(("index", "value"), [(8, "sent"), (24, "gremlins")])
def test_an_unknown_state_or_error_kind_is_refused(db: Database, tmp_path: Path, index: int, value: str) -> None:
    planned = _planned(db, tmp_path)
    raw = db.read(lambda view: view.query_one(
        f"SELECT {rows._REQUEST} FROM model_requests WHERE id = ?", (planned.request_id,)))  # noqa: S608
    assert raw is not None
    ended = (*raw[:8], "failed", *raw[9:])  # an ended request, so its error kind is decoded too

    with pytest.raises(StoredValueUnknownError):
        rows._request_row((*ended[:index], value, *ended[index + 1:]))
