"""Read before write through the implementation loop, with the scripted provider (not a model), the real
gateway, authority engine, SQLite file and worker processes: a file the conversation read is replaced
without a hash; one it never read is refused with "read it first"; reading it makes the write go through."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.ladder import Ladder, LadderPosition
from codeflux.domain.models import ToolResult
from codeflux.pipeline.program import pytest_argv
from codeflux.providers.scripted import ScriptedTurn
from codeflux.store import authority as authority_rows
from codeflux.store.database import Database
from tests.fixtures.repos import BASE_FILES
from tests.fixtures.task_runs import FIXED_CALC, USAGE, Harness, calc_tests, done, make_harness, scripted_gateway


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


def call(name: str, arguments: dict[str, object], call_id: str) -> ScriptedTurn:
    return ScriptedTurn.calling(name, arguments, call_id=call_id, usage=USAGE)


def results_shown(requests: tuple[object, ...]) -> dict[str, ToolResult]:
    """Every tool result the model was sent, by call id."""
    shown: dict[str, ToolResult] = {}
    for request in requests:
        for message in request.messages:  # type: ignore[attr-defined]
            for part in message.parts:
                if isinstance(part, ToolResult):
                    shown[part.call_id] = part
    return shown


def test_replacing_a_file_after_reading_it_needs_no_hash(harness: Harness) -> None:
    turns = [
        call("read_file", {"path": "pkg/calc.py"}, "r1"),
        call("write_file", {"path": "pkg/calc.py", "content": FIXED_CALC}, "w1"),
        call("write_file", {"path": "tests/test_calc.py", "content": calc_tests(-3)}, "w2"),  # never read
        call("read_file", {"path": "tests/test_calc.py"}, "r2"),
        call("write_file", {"path": "tests/test_calc.py", "content": calc_tests(-3)}, "w3"),
        done(),
    ]
    task_id = harness.ready_task()
    gateway, adapter = scripted_gateway(harness.db, turns)
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(Ladder.parse(["cheap:low"])),
                       limits=LoopLimits(), headless_policy=policy)

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW, outcome.reason
    shown = results_shown(adapter.requests)
    base_sha = hashlib.sha256(BASE_FILES["pkg/calc.py"].encode()).hexdigest()
    assert f"\nsha256 of the file now: {base_sha}\n" in shown["r1"].content
    assert not shown["w1"].is_error
    assert f"sha256 of the file now: {hashlib.sha256(FIXED_CALC.encode()).hexdigest()}" in shown["w1"].content
    assert shown["w2"].is_error
    assert shown["w2"].content.startswith("state: failed\nfailure: already-exists\nmessage: tests/test_calc.py: "
                                          "the file already exists and was not read (or changed since it was "
                                          "read): read it with read_file first")
    assert not shown["w3"].is_error

    # what the authority recorded is the filled-in request: the hash is part of the operation's identity
    def recorded_hash(turn: int, call_id: str) -> object:
        key = f"loop:{task_id.value}:1:turn-{turn}:{call_id}"
        row = harness.db.read(lambda view: authority_rows.tool_request_by_key(view, task_id=task_id,
                                                                             idempotency_key=key))
        assert row is not None and row.tool == "write_file"
        return dict(row.operation.arguments).get("expected_sha256")

    assert recorded_hash(2, "w1") == base_sha
    assert recorded_hash(3, "w2") is None
    assert recorded_hash(5, "w3") == hashlib.sha256(BASE_FILES["tests/test_calc.py"].encode()).hexdigest()
