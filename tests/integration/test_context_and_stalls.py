"""Issue 15 items 6 and 8, through the real loop: stalls that tell unrelated mistakes apart, a next attempt that
starts from a summary of the previous one, and a conversation kept inside the model's context window — with
the scripted provider (not a model), the real gateway and ledger, real worker processes, git and pytest checks.

The reproductions of the issue's "Why": error texts omitted the path, so three misses on three different files
were one fingerprint and stalled the rung; the next attempt's conversation said only which gate failed; there
was no context-window check, and "prompt is too long" was unrecoverable because a resume re-sent the same
history. Also: a ``./``-prefixed write path was classified as possibly leaving the worktree (an approval) and
refused by the worker, where it names the same file as the path without it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.runs.context_window import COMPACTED_NOTE, SUMMARY_NOTE
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcome, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.domain.context_window import estimate_request_tokens, fits_window
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest, ToolResult
from codeflux.domain.money import USD
from codeflux.domain.pricing import Price
from codeflux.pipeline.program import pytest_argv
from codeflux.providers.scripted import ScriptedAdapter, ScriptedTurn
from codeflux.store import loop_transcripts as transcript_rows
from codeflux.store.database import Database, ReadView
from tests.fixtures.repos import BASE_FILES, commit_all, write_files
from tests.fixtures.task_runs import (
    FIXED_CALC,
    USAGE,
    Harness,
    calc_tests,
    done,
    make_harness,
    write_file,
)

pytestmark = pytest.mark.slow

FIXED_TESTS = calc_tests(-3)
NOTES = "".join(f"{n:04d} the notes of the calc package say nothing that matters here; line {n}\n"
                for n in range(1, 161))  # about 12,000 characters: one read_file result of about 4,500 tokens
WINDOW = 32_000  # tokens: the first request is about 4,200 + 8,192 of output; three reads pass 75 % of it


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        built = make_harness(db, tmp_path, driver)
        write_files(built.repo, {"docs/notes.txt": NOTES})
        commit_all(built.repo, "notes")
        yield built


def gateway_over(db: Database, turns: list[ScriptedTurn], *, window: int | None = None
                 ) -> tuple[ModelGateway, ScriptedAdapter]:
    price = Price.from_per_million_tokens(currency=USD, input_per_million="1.00", output_per_million="1.00")
    for model in ("scripted-cheap", "scripted-capable"):
        PriceCatalog(db).set_user_price(provider="scripted", model=model, effective_date=dt.date(2026, 1, 1),
                                        price=price)
    adapter = ScriptedAdapter(turns, context_window=window)
    route = ModelRoute(provider="scripted", adapter=adapter, cheap_model="scripted-cheap",
                       capable_model="scripted-capable")
    return ModelGateway(db, [route]), adapter


def run(harness: Harness, turns: list[ScriptedTurn], *, window: int | None = None
        ) -> tuple[TaskId, RunOutcome, ScriptedAdapter]:
    task_id = harness.ready_task()
    gateway, adapter = gateway_over(harness.db, turns, window=window)
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=LoopLimits(),
                       headless_policy=policy)
    return task_id, outcome, adapter


def read(path: str, call_id: str, **more: object) -> ScriptedTurn:
    return ScriptedTurn.calling("read_file", {"path": path, **more}, call_id=call_id, usage=USAGE)


def fix_both(prefix: str = "", *, calc_now: str = BASE_FILES["pkg/calc.py"], tag: str = "") -> list[ScriptedTurn]:
    return [write_file(f"{prefix}pkg/calc.py", FIXED_CALC, f"{tag}w1", replacing=calc_now),
            write_file(f"{prefix}tests/test_calc.py", FIXED_TESTS, f"{tag}w2",
                       replacing=BASE_FILES["tests/test_calc.py"])]


def text_of(request: ModelRequest | tuple[Message, ...] | list[Message]) -> str:
    messages = request.messages if isinstance(request, ModelRequest) else request
    return "\n".join(getattr(part, "text", "") or getattr(part, "content", "")
                     for message in messages for part in message.parts)


def is_summary_call(request: ModelRequest) -> bool:
    return not request.tools and "summaries of tool results" in request.system


def conversations(harness: Harness, task_id: TaskId) -> list[tuple[transcript_rows.LoopConversationRow,
                                                                   list[Message]]]:
    def read_all(view: ReadView) -> list[tuple[transcript_rows.LoopConversationRow, list[Message]]]:
        return [(row, [m.message for m in transcript_rows.loop_messages_of(view, row.conversation_id)])
                for row in transcript_rows.loop_conversations_of_task(view, task_id)]

    return harness.db.read(read_all)


# ─── stalls: the tool, the target, the failure kind (item 6) ──────────────────────────────────────────


def test_three_misses_on_different_files_do_not_stall_and_dot_slash_paths_write_without_approval(
        harness: Harness) -> None:
    misses = [read(f"pkg/missing_{name}.py", f"m{name}") for name in "abc"]

    task_id, outcome, adapter = run(harness, [*misses, *fix_both("./"), done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert outcome.attempt == 1 and not outcome.denials  # no stall, no write waiting for approval
    told = text_of(adapter.requests[3])
    for name in "abc":  # each miss names its own file
        assert f"message: pkg/missing_{name}.py: path refused: it does not exist" in told
    worktree = harness.tasks.show(task_id).task.worktree
    assert (worktree / "pkg" / "calc.py").read_text() == FIXED_CALC  # ./pkg/calc.py is pkg/calc.py


def test_the_same_miss_three_times_stalls_and_the_next_attempt_starts_from_a_summary_of_the_last(
        harness: Harness) -> None:
    first = [fix_both()[0], *(read("pkg/missing.py", f"m{n}") for n in range(3))]
    second = [*fix_both(calc_now=FIXED_CALC, tag="a2"), done()]

    _, outcome, adapter = run(harness, [*first, *second])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert outcome.attempt == 2  # the third identical miss stalled attempt 1 and climbed
    opening = adapter.requests[4]
    # a new conversation: its first message carries the summary, the second the approved operations
    assert len(opening.messages) == 2 and opening.messages[1].text.startswith("Approved operations")
    summary = text_of(opening)
    assert "Summary of attempt 1, from codeflux's records" in summary
    assert "sent back by implementation on rung cheap:max" in summary  # what failed, and where it climbed
    assert "the failure that recurred: read_file pkg/missing.py (not-found)" in summary
    assert "- write_file pkg/calc.py: succeeded × 1" in summary  # the tool calls tried, counted
    assert "- read_file pkg/missing.py: failed (not-found) × 3" in summary
    assert "Plan steps it completed: Handle negatives." in summary
    assert "Plan steps it left: Test negatives." in summary
    assert "differs from the base commit in: pkg/calc.py" in summary  # the diff as it is now
    assert "+NEGATIVES_HANDLED = True" in summary


# ─── context management and compaction (item 8) ──────────────────────────────────────────────────────


def test_a_task_whose_tool_outputs_outgrow_a_small_window_goes_on_through_a_compaction(harness: Harness) -> None:
    summary = ScriptedTurn(text="docs/notes.txt: 160 numbered lines of notes; nothing about add().", usage=USAGE)
    turns = [read("docs/notes.txt", "r1"), read("./docs/notes.txt", "r2"), read("docs/notes.txt", "r3"),
             summary, *fix_both(), done()]

    task_id, outcome, adapter = run(harness, turns, window=WINDOW)

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    requests = adapter.requests
    assert [is_summary_call(request) for request in requests] == [False] * 3 + [True] + [False] * 3
    before, after = requests[2], requests[4]
    assert estimate_request_tokens(before) + before.max_output_tokens <= WINDOW  # nothing was ever refused
    assert estimate_request_tokens(after) + after.max_output_tokens < WINDOW * 75 // 100
    assert all(fits_window(request, WINDOW) for request in requests)
    # the oldest result was compacted: its call keeps its result, which now carries the summary and a note
    results = [part for part in after.messages[3].parts if isinstance(part, ToolResult)]  # after the rules
    assert len(results) == 1 and results[0].call_id == "r1"
    assert SUMMARY_NOTE.format(first=4, last=4) in results[0].content
    assert "nothing about add()" in results[0].content
    assert COMPACTED_NOTE.split(";")[0] in results[0].content and len(results[0].content) < 1_500
    # the recent results are whole
    assert NOTES.splitlines()[-1] in text_of(after.messages[4:])
    # the transcript records it: the original conversation closed as compacted, the compacted one goes on
    (old, old_messages), (new, new_messages) = conversations(harness, task_id)
    assert old.closed_reason is not None
    assert old.closed_reason.startswith("compacted: the tool results of messages 4–4")
    assert "a summary written by the model" in old.closed_reason
    assert NOTES.splitlines()[-1] in text_of(old_messages)
    assert new_messages[:len(after.messages)] == list(after.messages)  # what a resumed run restores
    assert new.closed_reason is not None and "validation" in new.closed_reason  # it went on to review


def test_a_too_long_refusal_compacts_and_asks_once_more_instead_of_failing(harness: Harness) -> None:
    summary = ScriptedTurn(text="notes: nothing relevant.", usage=USAGE)
    turns = [read("docs/notes.txt", "r1"), read("docs/notes.txt", "r2"), ScriptedTurn(too_long=True),
             summary, *fix_both(), done()]

    task_id, outcome, adapter = run(harness, turns)

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    refused, summarizing, retried = adapter.requests[2:5]
    assert is_summary_call(summarizing) and not is_summary_call(retried)
    assert COMPACTED_NOTE.split(";")[0] not in text_of(refused)
    assert "[codeflux: compacted;" in text_of(retried) and len(text_of(retried)) < len(text_of(refused)) - 8_000
    states = harness.db.read(lambda view: view.query_all(
        "SELECT idempotency_key, state, error_kind FROM model_requests WHERE task_id = ? ORDER BY rowid",
        (task_id.value,)))
    keys = [(str(key).rsplit(":", 2)[-2:], state, kind) for key, state, kind in states]
    assert [key for key, _, _ in keys][2:5] == [["1", "turn-3"], ["turn-3", "compaction-1"],
                                                ["turn-3", "after-compaction"]]
    assert [(state, kind) for _, state, kind in keys][2] == ("failed", "rejected")  # released, not billed
