"""Issue 15 item 7, through the real loop: replies the loop cannot take as they are — empty, cut at the
output bound, or carrying thinking the redaction scan would alter — with the scripted provider (not a model),
the real gateway, worker processes and pytest checks; each case reaches review clean.

The reproduction of the issue's "Why": an empty reply used to be stored and re-sent (``content: []`` /
``content: null``, refused by the providers on every resume); a reply cut at ``max_tokens`` had its partial
tool call executed; thinking blocks were redacted before storage, breaking their signatures on resume.
The scripted provider refuses a request carrying an empty assistant turn as the real adapters do, so a run
that reaches review here sent none.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.loop_steps import conversation_summary
from codeflux.coordinator.runs.reply_rules import CONTINUE_AFTER_CUT, CONTINUE_AFTER_EMPTY
from codeflux.coordinator.runs.runner import HeadlessPolicy, PreapprovedOperation, RunOutcome, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.tasks.service import Actor
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import (
    Message,
    ModelReply,
    ModelRequest,
    ReasoningPart,
    Role,
    StopReason,
    TextPart,
    ToolCall,
)
from codeflux.domain.tasks import TaskState
from codeflux.pipeline.program import pytest_argv
from codeflux.providers.scripted import ScriptedAdapter, ScriptedTurn
from codeflux.providers.wire import TextSink
from codeflux.store import loop_transcripts as transcript_rows
from codeflux.store.database import Database, ReadView, Transaction
from tests.fixtures.repos import BASE_FILES
from tests.fixtures.task_runs import (
    FIXED_CALC,
    USAGE,
    Harness,
    calc_tests,
    done,
    make_harness,
    scripted_gateway,
    write_file,
)
from tests.fixtures.tasks import keys
from tests.integration.test_headless_run import cli, demo, run_args

pytestmark = pytest.mark.slow

FIXED_TESTS = calc_tests(-3)


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


def fix_calc() -> ScriptedTurn:
    return write_file("pkg/calc.py", FIXED_CALC, "w1", replacing=BASE_FILES["pkg/calc.py"])


def fix_tests(call_id: str = "w2") -> ScriptedTurn:
    return write_file("tests/test_calc.py", FIXED_TESTS, call_id, replacing=BASE_FILES["tests/test_calc.py"])


def run(harness: Harness, turns: list[ScriptedTurn], *, task_id: TaskId | None = None,
        limits: LoopLimits | None = None, output_tokens: dict[str, int] | None = None,
        ) -> tuple[TaskId, RunOutcome, ScriptedAdapter]:
    task_id = task_id or harness.ready_task()
    gateway, adapter = scripted_gateway(harness.db, turns, output_tokens=output_tokens)
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])
    outcome = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                       repo_snapshot=harness.snapshot(), position=LadderPosition.start(),
                       limits=limits or LoopLimits(), headless_policy=policy)
    return task_id, outcome, adapter


def stored(harness: Harness, task_id: TaskId) -> list[Message]:
    """The task's conversation as SQLite keeps it (what a resumed run sends)."""
    def read(view: ReadView) -> list[Message]:
        latest = transcript_rows.latest_loop_conversation(view, task_id)
        assert latest is not None
        return [row.message for row in transcript_rows.loop_messages_of(view, latest.conversation_id)]

    return harness.db.read(read)


def write_requests(harness: Harness, task_id: TaskId) -> list[str]:
    rows = harness.db.read(lambda view: view.query_all(
        "SELECT idempotency_key FROM tool_requests WHERE task_id = ? AND tool = 'write_file'"
        " ORDER BY requested_at_us, rowid", (task_id.value,)))
    return [str(row[0]) for row in rows]


def no_blank_turn_was_sent(adapter: ScriptedAdapter) -> bool:
    return not any(message.is_blank for request in adapter.requests for message in request.messages)


# ──────────────────────────────────────────────────────────────────────────────────────── empty replies


@pytest.mark.parametrize("empty", [
    ScriptedTurn(text="", usage=USAGE),
    ScriptedTurn(text=" \n", usage=USAGE),
    ScriptedTurn(reasoning=(ReasoningPart(text="Next the tests.", signature="sig-1"),), usage=USAGE),
], ids=["nothing", "whitespace", "only-thinking"])  # fmt: skip
def test_an_empty_reply_mid_task_is_never_stored_and_the_model_is_asked_to_continue(
    harness: Harness, empty: ScriptedTurn
) -> None:
    task_id, outcome, adapter = run(harness, [fix_calc(), empty, fix_tests(), done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert no_blank_turn_was_sent(adapter)
    after_empty = adapter.requests[2].messages
    assert after_empty[-1] == Message.user_text(CONTINUE_AFTER_EMPTY)
    assert after_empty[-2].role is Role.USER  # the tool results the empty reply answered: nothing between them
    kept = stored(harness, task_id)
    assert not any(message.is_blank for message in kept)
    assert [m.role for m in kept].count(Role.ASSISTANT) == 3  # w1, w2, done — not the empty one


def test_empty_replies_that_keep_coming_end_the_attempt_without_storing_one(harness: Harness) -> None:
    empty = ScriptedTurn(text="", usage=USAGE)

    task_id, outcome, adapter = run(harness, [fix_calc(), empty, empty, empty], limits=LoopLimits(max_turn_retries=2))

    assert outcome.kind is RunOutcomeKind.FAILED
    assert "the model's reply was empty 3 times in a row" in outcome.reason
    assert len(adapter.requests) == 4 and no_blank_turn_was_sent(adapter)
    assert not any(message.is_blank for message in stored(harness, task_id))


class OlderCodeflux(ScriptedAdapter):
    """The scripted provider, but when asked its second turn it first writes into the open conversation what an
    older codeflux stored after an empty reply — the empty assistant turn and the note that followed it — then
    finds its script exhausted (the task pauses with that conversation kept)."""

    def __init__(self, turns: list[ScriptedTurn], harness: Harness, task_id: TaskId) -> None:
        super().__init__(turns)
        self._harness, self._task_id = harness, task_id

    def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelReply:
        if len(self.requests) == 1:
            changes = self._harness.tasks.changes
            summary = conversation_summary(changes, self._task_id)
            assert summary is not None
            poison = [(Message(role=Role.ASSISTANT, parts=(TextPart(text=""),)), "loop:older:turn-2"),
                      (Message.user_text("These plan steps are not done yet: Test negatives."), None)]
            for message, key in poison:
                def append(tx: Transaction, m: Message = message, k: str | None = key) -> None:
                    transcript_rows.append_loop_message(
                        tx, conversation_id=summary.conversation_id, task_id=self._task_id, attempt=1, message=m,
                        turn_key=k, steps_done=(0,), redacted=False, at_us=changes.clock())

                self._harness.db.write(append)
        return super().complete(request, on_text=on_text)


def test_a_conversation_an_older_codeflux_stored_with_an_empty_turn_resumes_without_sending_it(
    harness: Harness,
) -> None:
    task_id = harness.ready_task()
    scripted_gateway(harness.db, [])  # prices the scripted models
    older = OlderCodeflux([fix_calc()], harness, task_id)
    gateway = ModelGateway(harness.db, [ModelRoute(provider="scripted", adapter=older, cheap_model="scripted-cheap",
                                                   capable_model="scripted-capable")])
    policy = HeadlessPolicy.allowing([PreapprovedOperation.command(pytest_argv(harness.venv_python))])
    paused = run_task(task_id, gateway=gateway, driver=harness.driver, tasks=harness.tasks,
                      repo_snapshot=harness.snapshot(), position=LadderPosition.start(), limits=LoopLimits(),
                      headless_policy=policy)
    assert paused.kind is RunOutcomeKind.PAUSED, paused.reason
    assert any(message.is_blank for message in stored(harness, task_id))  # the poison is in SQLite
    view = harness.tasks.show(task_id)
    harness.tasks.transition(task_id, TaskState.READY, expected_revision=view.task.revision, reason="resume",
                             actor=Actor.USER, idempotency_key=keys())

    _, resumed, adapter = run(harness, [fix_tests(), done()], task_id=task_id)

    assert resumed.kind is RunOutcomeKind.AWAITING_REVIEW and resumed.clean, resumed.reason
    assert no_blank_turn_was_sent(adapter)  # before: every resume sent it, and the provider refused it
    first = adapter.requests[0].messages
    # the prompt, the approved operations (told once: not again on resume), the call, its result, the poison text
    assert [m.role for m in first] == [Role.USER, Role.USER, Role.ASSISTANT, Role.USER, Role.USER]
    assert first[-1].text.startswith("These plan steps are not done yet")


# ─────────────────────────────────────────────────────────────────────────────── cut at the output bound


def test_a_tool_call_cut_at_max_tokens_never_runs_and_the_turn_is_asked_again_with_more_room(
    harness: Harness,
) -> None:
    """The cut call is valid JSON that would write half a test file: it must not run."""
    half = ToolCall(call_id="cut1", name="write_file", arguments_json=json.dumps({
        "path": "tests/test_calc.py", "content": FIXED_TESTS[:40],
        "expected_sha256": fix_tests().tool_calls[0].arguments()["expected_sha256"]}))
    cut = ScriptedTurn(text="Writing the tests.", tool_calls=(half,), stop_reason=StopReason.MAX_TOKENS,
                       usage=USAGE)

    task_id, outcome, adapter = run(harness, [fix_calc(), cut, fix_tests(), done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert [key.rsplit(":", 1)[-1] for key in write_requests(harness, task_id)] == ["w1", "w2"]  # never cut1
    assert [request.max_output_tokens for request in adapter.requests] == [8192, 8192, 16_384, 8192]
    assert adapter.requests[2].messages == adapter.requests[1].messages  # the cut reply was not kept
    assert "cut1" not in json.dumps([transcript_rows.message_to_json(m) for m in stored(harness, task_id)])


def test_a_tool_call_cut_at_the_configured_bound_is_asked_again_with_a_larger_one_never_the_same(
    harness: Harness,
) -> None:
    """Issue 21 item 10: a model's configured bound replaced every bound the loop asked, so the cut turn was asked
    again with the bound that cut it. Now the re-ask carries twice the configured bound or what the loop asks,
    whichever is larger (within the window), and the request's record says so."""
    cut = ScriptedTurn(tool_calls=fix_tests("cut").tool_calls, stop_reason=StopReason.MAX_TOKENS, usage=USAGE)

    task_id, outcome, adapter = run(harness, [fix_calc(), cut, fix_tests(), done()],
                                    output_tokens={"scripted-cheap": 2000})

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert [request.max_output_tokens for request in adapter.requests] == [2000, 2000, 16_384, 2000]
    recorded = harness.db.read(lambda view: view.query_all(
        "SELECT max_output_tokens FROM model_requests WHERE task_id = ? ORDER BY planned_at_us, rowid",
        (task_id.value,)))
    assert [int(row[0]) for row in recorded] == [2000, 2000, 16_384, 2000]


def test_a_reply_cut_before_a_word_because_thinking_used_the_bound_is_asked_again_with_more_room(
    harness: Harness,
) -> None:
    thinking_only = ScriptedTurn(reasoning=(ReasoningPart(text="Long thought", signature="s"),),
                                 stop_reason=StopReason.MAX_TOKENS, usage=USAGE)

    _, outcome, adapter = run(harness, [fix_calc(), thinking_only, thinking_only, fix_tests(), done()],
                              limits=LoopLimits(max_output_tokens=4096))

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert [request.max_output_tokens for request in adapter.requests] == [4096, 4096, 8192, 16_384, 4096]


def test_text_cut_at_max_tokens_is_kept_and_the_model_is_asked_to_go_on(harness: Harness) -> None:
    cut = ScriptedTurn(text="Now I will write the test that checks add(-1, -2) eq", stop_reason=StopReason.MAX_TOKENS,
                       usage=USAGE)

    task_id, outcome, adapter = run(harness, [fix_calc(), cut, fix_tests(), done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert [m.text for m in adapter.requests[2].messages[-2:]] == [cut.text, CONTINUE_AFTER_CUT]
    assert adapter.requests[2].max_output_tokens == 8192
    assert any(m.role is Role.ASSISTANT and m.text == cut.text for m in stored(harness, task_id))


def test_cut_replies_that_keep_coming_end_the_attempt_and_none_of_their_calls_run(harness: Harness) -> None:
    cut = ScriptedTurn(tool_calls=fix_tests("cut").tool_calls, stop_reason=StopReason.MAX_TOKENS, usage=USAGE)

    task_id, outcome, adapter = run(harness, [fix_calc(), cut, cut, cut])

    assert outcome.kind is RunOutcomeKind.FAILED
    assert "cut at the output bound (16384 tokens) 3 times in a row; its cut tool calls were not run" in outcome.reason
    assert [request.max_output_tokens for request in adapter.requests] == [8192, 8192, 16_384, 16_384]
    assert [key.rsplit(":", 1)[-1] for key in write_requests(harness, task_id)] == ["w1"]


# ──────────────────────────────────────────────────────────────────────────────── thinking, unaltered


def test_thinking_of_a_tool_turn_is_stored_unaltered_or_the_turn_is_asked_again(harness: Harness) -> None:
    """Before: thinking was redacted before storage, so a resumed run sent a block whose signature no longer
    matched. Now a block the scan finds nothing in is stored byte for byte; one holding a key-shaped string
    is never stored at all — its turn (tool call included) is dropped and asked again."""
    shaped = "sk-ant-" + secrets.token_hex(24)  # a key pattern the redaction scan hides
    leaky = ReasoningPart(text=f"The config has {shaped}; ignore it.", signature="sig-leaky")
    clean = ReasoningPart(text="Write the test next.", signature="EqQBCgIYAhIM+/=")
    with_leak = ScriptedTurn(tool_calls=fix_tests("leaky").tool_calls, reasoning=(leaky,), usage=USAGE)
    with_clean = ScriptedTurn(tool_calls=fix_tests().tool_calls, reasoning=(clean,), usage=USAGE)

    task_id, outcome, adapter = run(harness, [fix_calc(), with_leak, with_clean, done()])

    assert outcome.kind is RunOutcomeKind.AWAITING_REVIEW and outcome.clean, outcome.reason
    assert [key.rsplit(":", 1)[-1] for key in write_requests(harness, task_id)] == ["w1", "w2"]  # never "leaky"
    assert adapter.requests[2].messages == adapter.requests[1].messages
    kept = stored(harness, task_id)
    thoughts = [part for message in kept for part in message.parts if isinstance(part, ReasoningPart)]
    assert thoughts == [clean]  # unaltered: text and signature as the provider sent them
    assert shaped not in json.dumps([transcript_rows.message_to_json(m) for m in kept])


def test_thinking_that_keeps_leaking_ends_the_attempt(harness: Harness) -> None:
    leaky = ReasoningPart(text="token sk-ant-" + secrets.token_hex(24), signature="s")
    turn = ScriptedTurn(tool_calls=fix_tests().tool_calls, reasoning=(leaky,), usage=USAGE)

    task_id, outcome, _ = run(harness, [fix_calc(), turn, turn, turn])

    assert outcome.kind is RunOutcomeKind.FAILED and "thinking held text the redaction scan hides" in outcome.reason
    assert [key.rsplit(":", 1)[-1] for key in write_requests(harness, task_id)] == ["w1"]


# ───────────────────────────────────────────────────────────────────── the same through `codeflux run`


def test_codeflux_run_with_a_cut_and_an_empty_reply_in_its_script_reaches_review_with_exit_0(tmp_path: Path) -> None:
    """The script format says it as a model would: ``stop_reason: max-tokens`` and the raw arguments text of
    a cut call (valid JSON here, half an edit: run, it would break ``add()`` and the real edit after it)."""
    repo, data = demo(tmp_path)
    demo_turns = json.loads((Path(__file__).parents[2] / "codeflux/cli/demo_files/script.json").read_text())
    cut = {"text": "Fixing add().", "stop_reason": "max-tokens", "usage": {"input_tokens": 400, "output_tokens": 8192},
           "tool_calls": [{"id": "cut-1", "name": "edit_file", "arguments": json.dumps(
               {"path": "calc/ops.py", "old_text": "    return abs(a) + abs(b)\n", "new_text": "    return a +"})}]}
    empty = {"text": "", "usage": {"input_tokens": 400, "output_tokens": 2}}
    fix, test, finished = demo_turns["run"]
    script = tmp_path / "natural.json"
    script.write_text(json.dumps({"plan": demo_turns["plan"], "run": [cut, fix, empty, test, finished]}))

    ran = cli(data, *run_args(repo, "--script", str(script), "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--yes"))

    assert ran.code == 0, ran.out + ran.err
    assert "awaiting-review" in ran.out
    assert re.search(r"integration-tests\s+satisfied .*3 tests, 3 passed, 0 failed", ran.out), ran.out
