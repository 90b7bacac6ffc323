"""Read before write in the loop: which sha256 a write_file without one gets, and that a resumed
conversation (rebuilt from the stored messages) fills in exactly the same."""

from __future__ import annotations

import json

from codeflux.coordinator.runs.loop_steps import describe_execution
from codeflux.coordinator.runs.shown_files import ShownFiles
from codeflux.coordinator.tool_calls import ExecutionRecord
from codeflux.domain.execution import ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.models import Message, Role, ToolCall, ToolResult

TASK = TaskId.parse("tsk_0123456789abcdef")
READ_SHA, WRITTEN_SHA = "a" * 64, "b" * 64


def record(state: ToolExecutionState, sha256: str | None = None) -> ExecutionRecord:
    return ExecutionRecord(execution_id="exe", request_id="req", task_id=TASK, state=state, failure_kind=None,
                           message="done", exit_code=None, content="", stdout=None, stderr=None,
                           content_truncated=False, stdout_truncated=False, stderr_truncated=False,
                           content_sha256=sha256, duration_ms=1)


def conversation(steps: list[tuple[str, dict[str, object], ExecutionRecord]]) -> tuple[ShownFiles, list[Message]]:
    """Run ``steps`` through a tracker as the loop does, and the messages the loop would have stored."""
    live = ShownFiles()
    messages = [Message.user_text("the requirement")]
    for index, (tool, arguments, result) in enumerate(steps):
        call = ToolCall(call_id=f"c{index}", name=tool, arguments_json=json.dumps(arguments))
        live.note(tool, live.fill(tool, arguments), result)
        failed = result.state is not ToolExecutionState.SUCCEEDED
        messages += [Message(role=Role.ASSISTANT, parts=(call,)),
                     Message(role=Role.USER, parts=(ToolResult(call_id=call.call_id, content=describe_execution(result),
                                                               is_error=failed),))]
    return live, messages


def filled(shown: ShownFiles, path: str) -> object:
    return shown.fill("write_file", {"path": path, "content": "new"}).get("expected_sha256")


def test_a_read_or_written_file_gets_its_last_shown_sha256_and_an_unread_one_none() -> None:
    live, messages = conversation([
        ("read_file", {"path": "src/a.py"}, record(ToolExecutionState.SUCCEEDED, READ_SHA)),
        ("edit_file", {"path": "src/b.py", "old_text": "x", "new_text": "y"},
         record(ToolExecutionState.SUCCEEDED, WRITTEN_SHA)),
    ])
    resumed = ShownFiles()
    resumed.restore(messages)
    for shown in (live, resumed):
        assert filled(shown, "src/a.py") == READ_SHA
        assert filled(shown, "./src//a.py") == READ_SHA  # the same path, however it is spelled
        assert filled(shown, "src/b.py") == WRITTEN_SHA
        assert filled(shown, "src/c.py") is None
    explicit = live.fill("write_file", {"path": "src/a.py", "content": "", "expected_sha256": "c" * 64})
    assert explicit["expected_sha256"] == "c" * 64  # the model's own hash is never replaced
    assert live.fill("edit_file", {"path": "src/a.py"}) == {"path": "src/a.py"}


def test_unseen_changes_forget_and_failures_change_nothing() -> None:
    patch = "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\n"
    live, messages = conversation([
        ("read_file", {"path": "src/a.py"}, record(ToolExecutionState.SUCCEEDED, READ_SHA)),
        ("read_file", {"path": "src/b.py"}, record(ToolExecutionState.SUCCEEDED, READ_SHA)),
        ("read_file", {"path": "src/c.py"}, record(ToolExecutionState.SUCCEEDED, READ_SHA)),
        ("read_file", {"path": "src/d.py"}, record(ToolExecutionState.SUCCEEDED, READ_SHA)),
        ("apply_patch", {"patch": patch}, record(ToolExecutionState.SUCCEEDED)),
        ("delete_file", {"path": "src/b.py"}, record(ToolExecutionState.SUCCEEDED)),
        ("write_file", {"path": "src/c.py", "content": "z"}, record(ToolExecutionState.OUTCOME_UNKNOWN)),
        ("write_file", {"path": "src/d.py", "content": "z"}, record(ToolExecutionState.FAILED)),
    ])
    resumed = ShownFiles()
    resumed.restore(messages)
    for shown in (live, resumed):
        assert filled(shown, "src/a.py") is None  # patched: the new content was never shown
        assert filled(shown, "src/b.py") is None  # deleted
        assert filled(shown, "src/c.py") is None  # the write may have happened
        assert filled(shown, "src/d.py") == READ_SHA  # a failed write changed nothing
