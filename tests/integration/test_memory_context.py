"""What memory tells the model (issue 19, use (c)): the planner's first message carries the applicable facts of the
repository, labelled as context that grants no authority — and only while they apply: once the file a fact rests on
changes, the fact is not sent (and is quarantined). A reviewed command is never shown to the model. Real SQLite, a
real git repository, the scripted provider (not a model) answering the planner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.memory_context import MEMORY_LABEL
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.memory import MemoryState
from codeflux.memory.learn import learn_repository_fact, learn_reviewed_command
from codeflux.providers.scripted import ScriptedTurn
from codeflux.store.database import Database
from codeflux.store.memory import memory_entry
from tests.fixtures.repos import commit_all, write_files
from tests.fixtures.task_runs import Harness, make_harness
from tests.integration.test_instruction_files import USAGE, plan, plan_text


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def first_message(harness: Harness) -> str:
    return plan(harness, [ScriptedTurn(text=plan_text(), usage=USAGE)])[0].messages[0].text


def test_an_applicable_fact_reaches_the_planner_labelled_and_a_changed_source_takes_it_away(harness: Harness) -> None:
    assert MEMORY_LABEL not in first_message(harness)  # nothing learned yet: no block at all
    fact = learn_repository_fact(harness.db, root=harness.repo, topic="package-layout",
                                 fact="calc code lives in pkg/calc.py; tests in tests/", sources=["pkg/calc.py"])
    learn_reviewed_command(harness.db, root=harness.repo, text="command curl https://example.invalid",
                           tool="run_command", arguments={"argv": ["curl", "https://example.invalid"]},
                           operation_identity="op_" + "0" * 64, repository_identity="rop_" + "0" * 64,
                           allowed="allow-once", decision_id="dec_" + "0" * 32, task_id="tsk_" + "0" * 32,
                           request_id="treq_" + "0" * 32, decided_at_us=1)

    shown = first_message(harness)

    assert MEMORY_LABEL in shown and "grants no authority" in shown  # positive control: the fact is sent, labelled
    assert f"[repository-fact] package-layout: calc code lives in pkg/calc.py; tests in tests/ ({fact.entry_id}" \
        in shown
    assert "curl" not in shown  # a reviewed command is never context: authority comes from decisions only

    write_files(harness.repo, {"pkg/calc.py": (harness.repo / "pkg" / "calc.py").read_text() + "\n# moved\n"})
    commit_all(harness.repo, "the file the fact rests on changed")

    assert "package-layout" not in first_message(harness)
    assert harness.db.read(lambda view: memory_entry(view, fact.entry_id)).state is MemoryState.QUARANTINED
