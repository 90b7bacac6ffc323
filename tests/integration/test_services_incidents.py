"""IncidentService through its method table, on a real database and a real git repository: the same traceback
from two runs is one incident with two occurrences, a different own frame a new incident, twenty identical
reports one incident counted twenty times; states are immutable rows (dismiss needs a reason, a fixed incident
seen again regresses naming the task that fixed it), and every outcome is one transaction with its event."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import incidents_pb2 as pb
from codeflux.coordinator.tasks.review import ReviewService
from codeflux.coordinator.tasks.service import PlanAuthor, TaskService
from codeflux.domain.errors import StoreError
from codeflux.domain.execution_graph import EdgeKind, NodeKind
from codeflux.domain.ids import IncidentId, TaskId
from codeflux.domain.incidents import IncidentState
from codeflux.domain.plans import plan_sha256
from codeflux.domain.tasks import Actor, TaskState
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.repository import open_repository
from codeflux.gitwork.worktrees import create_task_worktree
from codeflux.services import incidents
from codeflux.services.app import CoordinatorApp
from codeflux.services.graph import task_graph
from codeflux.services.registry import Code
from codeflux.store import incidents as incident_rows
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID
from codeflux.store.location import DataLocation
from tests.fixtures.repos import make_repository, write_files
from tests.fixtures.reviews import move
from tests.fixtures.services import call, refusal, service_app
from tests.fixtures.tasks import a_plan, keys

REPORT, LIST = "/codeflux.v1.IncidentService/Report", "/codeflux.v1.IncidentService/List"
SHOW, DISMISS = "/codeflux.v1.IncidentService/Show", "/codeflux.v1.IncidentService/Dismiss"
PROPOSE = "/codeflux.v1.IncidentService/Propose"


def traceback(*, prefix: str = "/home/dev/calc", line: int = 2, function: str = "add", count: int = 7) -> str:
    return ("Traceback (most recent call last):\n"
            f'  File "{prefix}/tests/test_calc.py", line {line + 3}, in test_add\n'
            "    assert add(1, 2) == 3\n"
            f'  File "{prefix}/pkg/calc.py", line {line}, in {function}\n'
            "    return a + b\n"
            f"TypeError: unsupported operand after {count} retries for job 0x7f3a2b\n")


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, incidents.methods)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repository(tmp_path).path


_KEYS = iter(range(10**9))


def report(app: CoordinatorApp, repo: Path, text: str, *, key: str | None = None) -> pb.IncidentReport:
    control = common_pb2.MutationControl(idempotency_key=key or f"r-{next(_KEYS)}")
    reply = call(app, REPORT, pb.ReportIncidentRequest(control=control, repository_root=str(repo), text=text))
    assert isinstance(reply, pb.IncidentReport)
    return reply


def kinds(db: Database) -> list[str]:
    rows = db.read(lambda view: view.query_all("SELECT kind FROM events WHERE session_id = ? ORDER BY sequence",
                                               (SYSTEM_SESSION_ID,)))
    return [str(row[0]) for row in rows]


def test_the_same_traceback_from_two_runs_is_one_incident_and_another_frame_a_new_one(
        app: CoordinatorApp, repo: Path) -> None:
    first = report(app, repo, traceback())
    again = report(app, repo, traceback(prefix="/srv/ci/build-918", line=40, count=3))
    assert first.created and not again.created
    assert again.incident.incident_id == first.incident.incident_id
    assert again.incident.occurrences == 2
    assert [(f.path, f.function) for f in first.incident.frames] == [("tests/test_calc.py", "test_add"),
                                                                     ("pkg/calc.py", "add")]
    assert first.incident.message == "unsupported operand after # retries for job <addr>"
    other = report(app, repo, traceback(function="sub"))
    assert other.created and other.incident.incident_id != first.incident.incident_id
    listed = call(app, LIST, pb.ListIncidentsRequest(repository_root=str(repo)))
    assert isinstance(listed, pb.IncidentList)
    assert sorted((i.incident_id, i.occurrences) for i in listed.incidents) == sorted(
        [(first.incident.incident_id, 2), (other.incident.incident_id, 1)])
    # one transaction per report: the repository's first sight, then each report's own event
    assert kinds(app.db) == ["repository-registered", "incident-new", "incident-recurred", "incident-new"]


def test_twenty_identical_reports_make_one_incident_counted_twenty_times(app: CoordinatorApp, repo: Path) -> None:
    replies = [report(app, repo, traceback()) for _ in range(20)]
    assert len({r.incident.incident_id for r in replies}) == 1
    assert [r.created for r in replies] == [True] + [False] * 19
    assert replies[-1].incident.occurrences == 20
    shown = call(app, SHOW, pb.ShowIncidentRequest(incident_id=replies[0].incident.incident_id, occurrences=3))
    assert isinstance(shown, pb.IncidentDetail)
    assert shown.incident.occurrences == 20 and len(shown.occurrences) == 3
    assert [h.state for h in shown.history] == ["new"]


def test_a_retried_report_is_not_counted_twice(app: CoordinatorApp, repo: Path) -> None:
    first = report(app, repo, traceback(), key="same")
    retried = report(app, repo, traceback(), key="same")
    assert retried.occurrence_id == first.occurrence_id and retried.incident.occurrences == 1
    code, _ = refusal(app, REPORT, pb.ReportIncidentRequest(
        control=common_pb2.MutationControl(idempotency_key="same"), repository_root=str(repo),
        text=traceback(function="sub")))
    assert code == Code.ABORTED
    assert report(app, repo, traceback(), key="another").incident.occurrences == 2  # positive control


def test_dismiss_needs_a_reason_is_recorded_and_is_final(app: CoordinatorApp, repo: Path) -> None:
    incident_id = report(app, repo, traceback()).incident.incident_id

    def dismiss(reason: str, key: str) -> pb.DismissIncidentRequest:
        return pb.DismissIncidentRequest(control=common_pb2.MutationControl(idempotency_key=key),
                                         incident_id=incident_id, reason=reason)

    assert refusal(app, DISMISS, dismiss("  ", "d-0"))[0] == Code.INVALID_ARGUMENT
    done = call(app, DISMISS, dismiss("a known flake in CI", "d-1"))
    assert isinstance(done, pb.IncidentDetail)
    assert done.incident.state == "dismissed"
    assert [(h.state, h.actor, h.reason) for h in done.history] == [
        ("new", "system", "first reported (cli)"), ("dismissed", "user", "a known flake in CI")]
    assert refusal(app, DISMISS, dismiss("again", "d-2"))[0] == Code.FAILED_PRECONDITION
    # seen again: counted, and the person's decision stands
    later = report(app, repo, traceback())
    assert (later.incident.state, later.incident.occurrences, later.created) == ("dismissed", 2, False)
    dismissed = call(app, LIST, pb.ListIncidentsRequest(state="dismissed"))
    assert isinstance(dismissed, pb.IncidentList) and [i.incident_id for i in dismissed.incidents] == [incident_id]
    new = call(app, LIST, pb.ListIncidentsRequest(state="new"))
    assert isinstance(new, pb.IncidentList) and not new.incidents
    assert kinds(app.db)[-2:] == ["incident-dismissed", "incident-recurred"]


def test_a_fixed_incident_seen_again_regresses_naming_the_task(app: CoordinatorApp, repo: Path) -> None:
    incident_id = report(app, repo, traceback()).incident.incident_id
    task = TaskService(app.db, worktrees_root=app.location.worktrees).create_task(
        open_repository(repo), "make add total", idempotency_key="task-1").task_id

    def fixed_by_task(tx: Transaction) -> None:  # what accepting a proposed task will record (item 4)
        for sequence, state in ((2, IncidentState.TASK_PROPOSED), (3, IncidentState.FIXED)):
            incident_rows.insert_incident_state(tx, incident_id=IncidentId.parse(incident_id), sequence=sequence,
                                                state=state, actor=Actor.SYSTEM, reason=state.value, task_id=task,
                                                at_us=sequence)

    app.db.write(fixed_by_task)
    again = report(app, repo, traceback(line=9))
    assert again.regressed and not again.created
    assert (again.incident.state, again.incident.state_task_id) == ("regressed", task.value)
    assert kinds(app.db)[-1] == "incident-regressed"
    follow = report(app, repo, traceback(line=11))  # positive control: regressed once, then counted
    assert not follow.regressed and follow.incident.occurrences == 3


def test_incident_rows_are_immutable_facts(app: CoordinatorApp, repo: Path) -> None:
    report(app, repo, traceback())
    for statement in ("UPDATE incidents SET message = 'x'", "UPDATE incident_occurrences SET redacted_text = 'x'",
                      "UPDATE incident_states SET reason = 'x'", "DELETE FROM incident_states",
                      "DELETE FROM incident_occurrences"):
        with pytest.raises(StoreError, match="ConstraintError"):
            app.db.write(lambda tx, sql=statement: tx.execute(sql))
    assert app.db.read(lambda view: view.query_one("SELECT COUNT(*) FROM incident_occurrences")) == (1,)


def test_refusals_name_the_problem_without_echoing_input(app: CoordinatorApp, repo: Path, tmp_path: Path) -> None:
    def attempt(root: str, text: str) -> tuple[int, str]:
        return refusal(app, REPORT, pb.ReportIncidentRequest(
            control=common_pb2.MutationControl(idempotency_key="x-1"), repository_root=root, text=text))

    assert attempt(str(repo), " \n\t ")[0] == Code.INVALID_ARGUMENT
    code, message = attempt(str(tmp_path / "secret-dir-name"), traceback())
    assert code == Code.FAILED_PRECONDITION and "secret-dir-name" not in message
    assert refusal(app, SHOW, pb.ShowIncidentRequest(incident_id="inc_" + "0" * 32))[0] == Code.NOT_FOUND
    assert refusal(app, SHOW, pb.ShowIncidentRequest(incident_id="tsk_whatever1"))[0] == Code.INVALID_ARGUMENT
    empty = call(app, LIST, pb.ListIncidentsRequest(repository_root=str(repo)))
    assert isinstance(empty, pb.IncidentList) and not empty.incidents


def _propose(app: CoordinatorApp, incident_id: str, key: str, check: str = "") -> pb.IncidentProposal:
    reply = call(app, PROPOSE, pb.ProposeIncidentTaskRequest(
        control=common_pb2.MutationControl(idempotency_key=key), incident_id=incident_id, check=check))
    assert isinstance(reply, pb.IncidentProposal)
    return reply


def _accept(app: CoordinatorApp, repo: Path, task_id: TaskId) -> None:
    """Plan, approve, run (a real worktree with a real change) and accept the proposed task."""
    service = TaskService(app.db, worktrees_root=app.location.worktrees)
    snapshot = open_repository(repo)
    draft = service.show(task_id).task
    planning = service.transition(task_id, TaskState.FORECASTING, expected_revision=draft.revision,
                                  reason="planning", actor=Actor.SYSTEM, idempotency_key=keys())
    plan = a_plan()
    drafted = service.record_plan_revision(task_id, plan, created_by=PlanAuthor.SCRIPTED,
                                           expected_revision=planning.revision, idempotency_key=keys())
    ready = service.approve_plan(task_id, revision=drafted.plan_revision or 0, sha256=plan_sha256(plan),
                                 idempotency_key=keys())
    service.start_run(task_id, snapshot, expected_revision=ready.revision, idempotency_key=keys())
    task = service.show(task_id).task
    assert task.repository_id is not None and task.base_revision is not None
    binding = create_task_worktree(snapshot.root, worktrees_root=task.worktree.parent.parent,
                                   repo_key=task.repository_id.value, task_id=task_id,
                                   base_commit=task.base_revision)
    write_files(binding.path, {"pkg/calc.py": "def add(a, b):\n    return int(a) + int(b)\n"})
    move(service, task_id, TaskState.VALIDATING, TaskState.AWAITING_REVIEW)
    ReviewService(app.db).accept_task(task_id, reviewed_identity=diff_against_base(binding).identity)


def test_a_proposal_is_a_draft_task_and_its_acceptance_fixes_the_incident_until_it_recurs(
        app: CoordinatorApp, repo: Path) -> None:
    incident_id = report(app, repo, traceback()).incident.incident_id
    proposal = _propose(app, incident_id, "p-1", check="python -m pytest tests/test_calc.py")

    task_id = TaskId.parse(proposal.task_id)
    task = TaskService(app.db, worktrees_root=app.location.worktrees).show(task_id).task
    assert task.state is TaskState.DRAFT  # proposal, never action: nothing runs before a plan is approved
    assert "TypeError in pkg/calc.py:add" in task.title
    for part in (incident_id, "tests/test_calc.py:test_add → pkg/calc.py:add", "for job 0x7f3a2b",
                 "`python -m pytest tests/test_calc.py` fails now with this failure and must pass after the change"):
        assert part in task.requirement
    assert (proposal.detail.incident.state, proposal.detail.incident.state_task_id) == ("task-proposed",
                                                                                        task_id.value)
    # the task and the incident's state committed together
    assert kinds(app.db)[-1] == "incident-task-proposed"
    assert refusal(app, PROPOSE, pb.ProposeIncidentTaskRequest(
        control=common_pb2.MutationControl(idempotency_key="p-2"), incident_id=incident_id))[0] == (
        Code.FAILED_PRECONDITION)
    assert _propose(app, incident_id, "p-1", check="python -m pytest tests/test_calc.py").task_id == task_id.value

    _accept(app, repo, task_id)
    fixed = call(app, SHOW, pb.ShowIncidentRequest(incident_id=incident_id))
    assert isinstance(fixed, pb.IncidentDetail)
    assert [(h.state, h.task_id) for h in fixed.history] == [
        ("new", ""), ("task-proposed", task_id.value), ("fixed", task_id.value)]
    # the execution graph links the incident to the task proposed from it and to the landing that fixed it
    graph = task_graph(app, task_id)
    incident_node = next(n for n in graph.nodes if n.kind is NodeKind.INCIDENT)
    assert (incident_node.id, incident_node.sequence) == (f"incident:{incident_id}", 0)
    assert incident_node.label.startswith("incident: TypeError in pkg/calc.py:add")
    assert "this task was proposed from it; accepting this task fixed it" in incident_node.summary
    landing = next(n.id for n in graph.nodes if n.kind is NodeKind.DELIVERY and n.label.startswith("landed on"))
    assert {(e.target, e.kind) for e in graph.edges if e.source == incident_node.id} == {
        (f"task:{task_id.value}", EdgeKind.CAUSED), (landing, EdgeKind.FIXED_BY)}
    again = report(app, repo, traceback(line=30))
    assert again.regressed and again.incident.state_task_id == task_id.value
    assert kinds(app.db)[-1] == "incident-regressed"
    regressed = next(n for n in task_graph(app, task_id).nodes if n.kind is NodeKind.INCIDENT)
    assert regressed.summary.startswith("now regressed; 2 occurrence(s)")
    assert "seen again after this task's fix (regressed)" in regressed.summary


def test_an_incident_is_proposed_again_only_once_its_task_ended_without_landing(
        app: CoordinatorApp, repo: Path) -> None:
    incident_id = report(app, repo, traceback()).incident.incident_id
    first = TaskId.parse(_propose(app, incident_id, "p-1").task_id)
    assert refusal(app, PROPOSE, pb.ProposeIncidentTaskRequest(
        control=common_pb2.MutationControl(idempotency_key="p-2"), incident_id=incident_id))[0] == (
        Code.FAILED_PRECONDITION)  # the first task is still open
    move(TaskService(app.db, worktrees_root=app.location.worktrees), first, TaskState.CANCELLED)
    second = _propose(app, incident_id, "p-3")
    assert second.task_id != first.value
    assert [(h.state, h.task_id) for h in second.detail.history] == [
        ("new", ""), ("task-proposed", first.value), ("task-proposed", second.task_id)]
