"""Plan revisions and decisions leave the store as the parsed plan and enums (the canonical JSON stays in the
store); an unknown author, verdict or decider is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import TaskId
from codeflux.domain.plans import PlanAuthor, PlanDecider, PlanVerdict, plan_sha256
from codeflux.domain.tasks import TaskState
from codeflux.store import plans as rows
from codeflux.store.database import Database, Transaction
from codeflux.store.tasks import insert_task
from tests.fixtures.task_runs import a_plan_with_two_steps


def _recorded(db: Database, tmp_path: Path) -> rows.PlanRevisionRow:
    task_id = TaskId.from_entropy(os.urandom(16))

    def work(tx: Transaction) -> rows.PlanRevisionRow:
        insert_task(tx, task_id=task_id, repository_root=tmp_path / "r", worktree=tmp_path / "w",
                    state=TaskState.AWAITING_PLAN_APPROVAL)
        revision = rows.insert_plan_revision(tx, task_id=task_id, plan=a_plan_with_two_steps(),
                                             created_by=PlanAuthor.SCRIPTED, feedback=None, at_us=1)
        rows.insert_plan_decision(tx, task_id=task_id, revision=revision.revision, sha256=revision.sha256,
                                  decision=PlanVerdict.SENT_BACK, feedback="smaller steps",
                                  decided_by=PlanDecider.HEADLESS_POLICY, at_us=2)
        return revision

    return db.write(work)


def test_a_revision_and_its_decision_read_back_as_domain_values(db: Database, tmp_path: Path) -> None:
    recorded = _recorded(db, tmp_path)
    stored = db.read(lambda view: rows.latest_plan_revision(view, recorded.task_id))
    decision = db.read(lambda view: rows.plan_decision(view, recorded.task_id, recorded.revision))

    assert stored == recorded and stored.created_by is PlanAuthor.SCRIPTED
    assert stored.sha256 == plan_sha256(stored.plan) and not hasattr(stored, "plan_json")
    assert decision is not None and decision.decision is PlanVerdict.SENT_BACK and not decision.approved
    assert decision.decided_by is PlanDecider.HEADLESS_POLICY


def test_an_unknown_author_verdict_or_decider_is_refused(db: Database, tmp_path: Path) -> None:
    recorded = _recorded(db, tmp_path)
    revision = db.read(lambda view: view.query_one(f"SELECT {rows._REVISION} FROM plan_revisions"  # noqa: S608
                                                   " WHERE task_id = ?", (recorded.task_id.value,)))
    decision = db.read(lambda view: view.query_one(f"SELECT {rows._DECISION} FROM plan_decisions"  # noqa: S608
                                                   " WHERE task_id = ?", (recorded.task_id.value,)))
    assert revision is not None and decision is not None

    with pytest.raises(StoredValueUnknownError, match="plan author"):
        rows._revision((*revision[:4], "oracle", *revision[5:]))
    with pytest.raises(StoredValueUnknownError, match="plan decision"):
        rows._decision((*decision[:3], "maybe", *decision[4:]))
    with pytest.raises(StoredValueUnknownError, match="plan decider"):
        rows._decision((*decision[:5], "system", *decision[6:]))
