"""``codeflux watch --auto-plan`` under load and under Ctrl-C (issue 22, item 4), with real components: the demo
repository, the watch's confined workers, a migrated store, and — for the model only — a loopback
OpenAI-compatible server (no key) answering each planning call with the demo's plan after a delay. The server
counts the requests it is answering at once; the gateway's ``model_requests`` rows give each call's reservation
and start/end times.

* A burst: 20 ticks failing 20 different ways reach one coordinator at once (as several watches, or the browser,
  call ``IncidentService/WatchTick``): 20 incidents, 20 draft tasks, and never more planning calls in flight than
  the active-task limit; every call the server saw had its reservation row in flight first; every task's settled
  spend within its budget, the total within the sum.
* Ctrl-C: the first signal during a plan draft says what the watch waits for, the second cancels the draft — the
  call under way is settled and its reply discarded, the task paused with the reason recorded, no plan.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from codeflux.api.v1 import incidents_pb2 as pb
from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.cli.run import add_provider_arguments
from codeflux.cli.start import CliModelAccess
from codeflux.coordinator.demo import create_sample_repository
from codeflux.coordinator.incidents import list_incidents
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.coordinator.tasks.gates import MAX_ACTIVE_TASKS
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.ids import TaskId
from codeflux.domain.incidents import IncidentState
from codeflux.domain.money import USD, Money
from codeflux.domain.pricing import Price
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.repository import open_repository
from codeflux.services import incidents as incident_services
from codeflux.store.database import Database
from codeflux.store.events import read_events_after
from codeflux.store.location import DataLocation
from codeflux.store.model_requests import ModelRequestRow, read_model_request, unfinished_model_requests
from codeflux.store.tasks import task_session_id
from tests.fixtures.provider_servers import ProviderServer, Reply, json_reply, openai_completion
from tests.fixtures.reviews import a_running_task_with_worktree, move
from tests.fixtures.services import call, control, service_app

MODEL = "llama-3.1-8b-local"
_keys = itertools.count(1)
# A check that fails a different way each run: a traceback whose message names a random word (numbers and hex
# would be masked by the fingerprint; letters are not), so every tick is a new incident.
_DISTINCT_FAILURE = ["python3", "-c", "import random, string\n"
                     "word = ''.join(random.choices(string.ascii_lowercase, k=12))\n"
                     "raise ValueError(f'the {word} check failed')\n"]


def _demo_plan_reply(delay_s: float) -> Reply:
    """The demo's shipped plan as an OpenAI-compatible completion, answered after ``delay_s``."""
    shipped = Path(sys.modules["codeflux.cli"].__file__ or "").parent / "demo_files" / "script.json"
    plan = json.loads(shipped.read_text("utf-8"))["plan"][0]["json"]
    usage = {"prompt_tokens": 3000, "completion_tokens": 400, "total_tokens": 3400}
    reply = json_reply(openai_completion(content=json.dumps(plan), usage=usage, model=MODEL))
    return Reply(status=reply.status, headers=reply.headers, chunks=reply.chunks, delay_s=delay_s)


def _local_model(db: Database, base_url: str) -> list[str]:
    """The endpoint approved and the model priced (as a person does: `codeflux prices set`); the provider flags."""
    approve_model_endpoint(db, provider=ProviderName.OPENAI_COMPATIBLE, base_url=base_url)
    price = Price.from_per_million_tokens(currency=USD, input_per_million="1.00", output_per_million="2.00")
    PriceCatalog(db).set_user_price(provider="openai-compatible", model=MODEL, price=price,
                                    effective_date=dt.date(2026, 1, 1))
    return ["--provider", "openai-compatible", "--base-url", base_url, "--no-key", "--cheap-model", MODEL]


def _allow_for_repository(driver: ToolDriver, tasks: TaskService, repo: Path, argv: list[str]) -> None:
    """A person allows exactly ``argv`` for the repository in a first task (then paused): what the watch needs."""
    first = a_running_task_with_worktree(tasks, open_repository(repo), {}).task_id
    asked = driver.submit_tool_request(first, "run_command", {"argv": argv}, idempotency_key=f"k{next(_keys)}",
                                       source="test")
    assert asked.decision.outcome is DecisionOutcome.PENDING
    driver.decide(asked.request_id, UserDecision.ALLOW_FOR_REPOSITORY, reason="the person allowed it for the repo")
    move(tasks, first, TaskState.PAUSED)


def _model_requests(db: Database, task_id: TaskId) -> list[ModelRequestRow]:
    events = db.read(lambda view: read_events_after(view, session_id=task_session_id(task_id), after_sequence=0,
                                                    limit=1000))
    ids = [str(event.payload["request_id"]) for event in events if event.kind == "model-call-planned"]
    return [db.read(lambda view, request_id=request_id: read_model_request(view, request_id)) for request_id in ids]


def test_a_burst_of_twenty_distinct_failures_plans_within_the_active_task_limit_and_the_budget(
    confined_driver: ToolDriver, db: Database, data_location: DataLocation, tmp_path: Path, server: ProviderServer
) -> None:
    tasks = TaskService(db, worktrees_root=data_location.worktrees)
    repo = create_sample_repository(tmp_path / "calc")
    _allow_for_repository(confined_driver, tasks, repo, _DISTINCT_FAILURE)
    parser = argparse.ArgumentParser()
    add_provider_arguments(parser)
    app = service_app(db, data_location, incident_services.methods,
                      models=CliModelAccess(db, parser.parse_args(_local_model(db, server.base_url + "/v1"))))
    server.enqueue(*[_demo_plan_reply(delay_s=0.4)] * 20)
    in_flight_rows: list[list[ModelRequestRow]] = []

    def reservations_first(_request: object) -> None:  # as each planning call reaches the "provider"
        in_flight_rows.append([row for row in db.read(unfinished_model_requests) if row.state == "in-flight"])

    server.on_request = reservations_first
    budget = Money(minor=5, currency=USD)  # each watch's --budget: $0.05
    replies: list[pb.WatchTickReply] = []
    errors: list[BaseException] = []

    def tick(number: int) -> None:
        try:
            reply = call(app, "/codeflux.v1.IncidentService/WatchTick", pb.WatchTickRequest(
                control=control(f"burst-{number}"), repository_root=str(repo), argv=_DISTINCT_FAILURE,
                auto_plan=True, budget="0.05", acknowledged_dirty_hash=""))
            assert isinstance(reply, pb.WatchTickReply)
            replies.append(reply)
        except BaseException as error:  # reported below, with the others
            errors.append(error)

    threads = [threading.Thread(target=tick, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert len(replies) == 20 and all(r.outcome == "failed" and r.incident_created for r in replies)

    incidents = list_incidents(db, repository_id=None, state=None, limit=50)
    assert len(incidents) == 20 and len({i.fingerprint.digest for i in incidents}) == 20
    assert all(i.state.state is IncidentState.TASK_PROPOSED and i.occurrences == 1 for i in incidents)
    proposed = [TaskId.parse(r.proposed_task_id) for r in replies]
    assert len(set(proposed)) == 20
    assert all(r.plan_revision == 1 for r in replies)
    assert {tasks.show(t).task.state for t in proposed} == {TaskState.AWAITING_PLAN_APPROVAL}  # never approved

    # concurrency, measured twice: by the server, and by the calls' start/end times in the gateway's rows
    assert len(server.requests) == 20
    assert 2 <= server.max_in_flight <= MAX_ACTIVE_TASKS, server.max_in_flight
    rows = [row for t in proposed for row in _model_requests(db, t)]
    assert len(rows) == 20
    spans = [(row.started_at_us, row.finished_at_us) for row in rows]
    assert all(start is not None and end is not None for start, end in spans)
    most = max(sum(1 for s, e in spans if s is not None and e is not None and s <= at < e)
               for at, _ in spans if at is not None)
    assert most <= MAX_ACTIVE_TASKS
    # every call the server saw had its row in flight, with a reservation, before the reply was sent
    assert len(in_flight_rows) == 20 and all(found for found in in_flight_rows)
    assert all(row.plan.reserved_minor is not None and row.plan.reserved_minor > 0
               for found in in_flight_rows for row in found)
    # each budget holds: spend settled (nothing left reserved), within its hard limit; the total within the sum
    summaries = [BudgetService(db).summary(t) for t in proposed]
    assert all(s.hard_limit == budget and s.reserved_known.minor == 0 and s.open_requests == 0 for s in summaries)
    assert all(0 < s.spent_known.minor <= budget.minor for s in summaries)
    assert sum(s.spent_known.minor for s in summaries) <= 20 * budget.minor
    assert sum(r.planning_spent_minor for r in replies) == sum(s.spent_known.minor for s in summaries)


def test_ctrl_c_says_what_the_watch_waits_for_and_a_second_one_cancels_the_plan_draft(
    confined_driver: ToolDriver, db: Database, data_location: DataLocation, tmp_path: Path, server: ProviderServer
) -> None:
    tasks = TaskService(db, worktrees_root=data_location.worktrees)
    """The console entry as a process, drafting in process: SIGINT while the planning call is at the provider,
    then SIGINT again → the call is settled, its reply discarded, the task paused with the reason; exit 0."""
    tasks = TaskService(db, worktrees_root=data_location.worktrees)
    repo = create_sample_repository(tmp_path / "calc")
    argv = ["python3", "-c", "raise ValueError('the watched check failed')"]
    _allow_for_repository(confined_driver, tasks, repo, argv)
    flags = _local_model(db, server.base_url + "/v1")
    server.enqueue(_demo_plan_reply(delay_s=3.0))
    process = subprocess.Popen(
        [sys.executable, "-m", "codeflux", "--data-dir", str(data_location.directory), "watch", "--repo", str(repo),
         "--command", shlex.join(argv), "--every", "1h", "--auto-plan", "--budget", "0.50", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    try:
        deadline = time.monotonic() + 30
        while not server.requests and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.requests, "the planning call never reached the provider"
        process.send_signal(signal.SIGINT)
        first = process.stderr.readline()
        assert "SIGINT: stopping after the tick under way" in first, first
        assert "waiting for the plan draft under way (a model call); press Ctrl-C again to cancel it" in first
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "SIGINT: cancelling the plan draft" in err
    assert "watch stopped after 1 tick(s) (SIGINT)" in out
    assert "plan revision" not in out and "the plan draft was cancelled (SIGINT)" in out, out

    [incident] = list_incidents(db, repository_id=None, state=None, limit=10)
    assert incident.state.state is IncidentState.TASK_PROPOSED and incident.state.task_id is not None
    task_id = incident.state.task_id
    shown = tasks.show(task_id)
    assert shown.task.state is TaskState.PAUSED and shown.plan is None  # nothing half-written: no plan revision
    events = db.read(lambda view: read_events_after(view, session_id=task_session_id(task_id), after_sequence=0,
                                                    limit=1000))
    reasons = [str(event.payload.get("reason")) for event in events if event.kind == "task-state-changed"]
    assert reasons[-1].startswith("SIGINT: the plan draft was cancelled"), reasons  # the pause, with its reason
    [row] = _model_requests(db, task_id)
    assert row.state == "succeeded" and row.end is not None  # the call under way was settled, not cut off
    summary = BudgetService(db).summary(task_id)
    assert summary.reserved_known.minor == 0 and summary.open_requests == 0
    assert summary.spent_known == Money(minor=row.end.cost_minor or 0, currency=USD)
    assert len(server.requests) == 1  # no further call after the cancel
