"""The text a reviewed-command entry is found by: the program and its arguments (or the tool and its arguments),
and the repository identity — so candidate search ranks the exact operation first."""

from __future__ import annotations

from codeflux.coordinator.runs.reviewed_commands import reviewed_operation_text
from codeflux.domain.ids import TaskId
from codeflux.domain.memory import MAX_ENTRY_TEXT_CHARS
from codeflux.domain.operations import ExecutablePin, describe_operation
from codeflux.domain.repository_approvals import RepositoryRoots, derive_repository_operation_identity
from codeflux.domain.tools import bind_tool_request

TASK = TaskId.parse("tsk_" + "1" * 32)
ROOTS = RepositoryRoots.of(["a" * 40])
PIN = ExecutablePin(path="/usr/bin/pytest", sha256="b" * 64)


def test_a_command_is_its_argv_then_the_tool_and_the_repository_identity() -> None:
    operation = describe_operation(bind_tool_request("run_command", {"argv": ["pytest", "-q", "tests"]}),
                                   task_id=TASK, executable=PIN)
    identity = derive_repository_operation_identity(operation, ROOTS)
    text = reviewed_operation_text(operation, identity)
    assert text.startswith("command pytest -q tests (tool run_command, cwd .")
    assert text.endswith(f"repository operation {identity})")


def test_another_tool_is_named_with_its_arguments_and_a_long_one_is_cut_before_the_identity() -> None:
    operation = describe_operation(bind_tool_request("read_file", {"path": "pkg/calc.py"}), task_id=TASK)
    identity = derive_repository_operation_identity(operation, ROOTS)
    assert reviewed_operation_text(operation, identity).startswith("tool read_file path pkg/calc.py")

    long = describe_operation(bind_tool_request("run_command", {"argv": ["echo", "x" * 5000]}), task_id=TASK,
                              executable=PIN)
    long_identity = derive_repository_operation_identity(long, ROOTS)
    text = reviewed_operation_text(long, long_identity)
    assert len(text) <= MAX_ENTRY_TEXT_CHARS and text.endswith(f"repository operation {long_identity})")
