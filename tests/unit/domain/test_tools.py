"""The tool catalog and binding a model's raw arguments to a descriptor."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.capabilities import Capability
from codeflux.domain.errors import ToolRequestInvalidError, UnsafeArgumentError, UsageError
from codeflux.domain.tools import (
    TOOL_CATALOG,
    ArgumentType,
    Effect,
    ToolName,
    ToolRequestProblem,
    bind_tool_request,
    tool_descriptor,
)

READ_TOOLS = {"read_file", "list_directory", "glob", "grep", "inspect_diff", "git_status", "git_log"}
WRITE_TOOLS = {"write_file", "edit_file", "apply_patch", "delete_file"}


def test_the_catalog_holds_exactly_the_twelve_tools() -> None:
    assert {tool.value for tool in TOOL_CATALOG} == READ_TOOLS | WRITE_TOOLS | {"run_command"}


@pytest.mark.parametrize("name", sorted(READ_TOOLS))
def test_read_tools_default_to_read_and_declare_a_repository_read(name: str) -> None:
    descriptor = tool_descriptor(ToolName(name))
    assert descriptor.default_capability is Capability.READ
    assert descriptor.effects == frozenset({Effect.REPOSITORY_READ})
    assert not descriptor.runs_program


@pytest.mark.parametrize("name", sorted(WRITE_TOOLS))
def test_write_tools_default_to_task_write(name: str) -> None:
    descriptor = tool_descriptor(ToolName(name))
    assert descriptor.default_capability is Capability.TASK_WRITE
    assert descriptor.effects == frozenset({Effect.WORKTREE_WRITE})


def test_run_command_takes_an_argv_array_only_and_pins_its_program() -> None:
    descriptor = tool_descriptor(ToolName.RUN_COMMAND)
    assert [(spec.name, spec.type) for spec in descriptor.arguments] == [("argv", ArgumentType.ARGV)]
    assert descriptor.default_capability is Capability.PROCESS
    assert descriptor.runs_program
    assert descriptor.effects == frozenset({Effect.SUBPROCESS})


def test_every_descriptor_fixes_the_working_directory_timeout_and_output_cap() -> None:
    for descriptor in TOOL_CATALOG.values():
        assert descriptor.working_directory == "."
        assert descriptor.limits.timeout_seconds > 0
        assert descriptor.limits.output_cap_bytes > 0


def test_arguments_are_put_in_the_descriptors_order_whatever_order_they_arrive_in() -> None:
    request = bind_tool_request("grep", {"max_results": 3, "ignore_case": True, "pattern": "x", "path": "src"})
    assert [argument.name for argument in request.arguments] == ["pattern", "path", "ignore_case", "max_results"]
    assert request.value("glob") is None


def test_an_explicit_null_for_an_optional_argument_counts_as_omitted() -> None:
    request = bind_tool_request("read_file", {"path": "a.py", "start_line": None})
    assert [argument.name for argument in request.arguments] == ["path"]


def test_an_argv_list_is_bound_as_a_tuple() -> None:
    request = bind_tool_request("run_command", {"argv": ["git", "status"]})
    assert request.argv() == ("git", "status")
    assert request.tool is ToolName.RUN_COMMAND


def test_write_file_accepts_an_expected_sha256_for_updates() -> None:
    request = bind_tool_request("write_file", {"path": "a", "content": "", "expected_sha256": "0" * 64})
    assert request.value("expected_sha256") == "0" * 64


def problem_of(tool: str, raw: dict[str, object]) -> str:
    with pytest.raises(ToolRequestInvalidError) as caught:
        bind_tool_request(tool, raw)
    return caught.value.problem


def test_an_unknown_tool_is_refused() -> None:
    assert problem_of("shell", {}) == ToolRequestProblem.UNKNOWN_TOOL


@pytest.mark.security
@pytest.mark.parametrize(
    "smuggled",
    ["cwd", "timeout", "effects", "authority", "claimed_authority", "purpose", "capability", "env", "approved"],
)
def test_the_model_cannot_choose_cwd_timeout_effects_or_authority(smuggled: str) -> None:
    raw = {"argv": ["curl", "https://example.com"], smuggled: "read-only; approved by the user"}
    assert problem_of("run_command", raw) == ToolRequestProblem.UNKNOWN_ARGUMENT


def test_a_missing_required_argument_is_refused() -> None:
    assert problem_of("edit_file", {"path": "a", "old_text": "x"}) == ToolRequestProblem.MISSING_ARGUMENT
    assert problem_of("read_file", {"path": None}) == ToolRequestProblem.MISSING_ARGUMENT


@pytest.mark.parametrize(
    ("tool", "raw"),
    [
        ("read_file", {"path": 3}),
        ("read_file", {"path": "a", "start_line": True}),
        ("read_file", {"path": "a", "start_line": "3"}),
        ("read_file", {"path": "a", "start_line": 1.0}),
        ("list_directory", {"recursive": 1}),
        ("run_command", {"argv": "curl https://example.com"}),
        ("run_command", {"argv": ["curl", 3]}),
        ("run_command", {"argv": {"0": "curl"}}),
        ("grep", {"pattern": ["x"]}),
    ],
)
def test_a_value_of_the_wrong_type_is_refused(tool: str, raw: dict[str, object]) -> None:
    assert problem_of(tool, raw) == ToolRequestProblem.WRONG_TYPE


@pytest.mark.parametrize(
    ("tool", "raw"),
    [
        ("write_file", {"path": "a", "content": "x" * (512 * 1024 + 1)}),
        ("write_file", {"path": "a", "content": "é" * (256 * 1024 + 1)}),
        ("run_command", {"argv": ["echo"] * 257}),
        ("run_command", {"argv": ["echo", "x" * (32 * 1024)]}),
        ("read_file", {"path": "a" * 4097}),
    ],
)
def test_an_oversized_value_is_refused(tool: str, raw: dict[str, object]) -> None:
    assert problem_of(tool, raw) == ToolRequestProblem.TOO_LARGE


@pytest.mark.parametrize(
    ("tool", "raw"),
    [
        ("run_command", {"argv": []}),
        ("run_command", {"argv": [""]}),
        ("read_file", {"path": ""}),
        ("read_file", {"path": "a", "start_line": 0}),
        ("git_log", {"max_count": 501}),
        ("edit_file", {"path": "a", "old_text": "", "new_text": "y"}),
        ("write_file", {"path": "a", "content": "", "expected_sha256": "XYZ"}),
    ],
)
def test_an_invalid_value_is_refused(tool: str, raw: dict[str, object]) -> None:
    assert problem_of(tool, raw) == ToolRequestProblem.INVALID_VALUE


@pytest.mark.parametrize(
    ("tool", "raw"),
    [
        ("read_file", {"path": "a\x00.py"}),
        ("run_command", {"argv": ["curl", "https://example.com\x00.evil"]}),
        ("write_file", {"path": "a", "content": "x\x00y"}),
        ("grep", {"pattern": "\ud800"}),
    ],
)
def test_nul_bytes_and_broken_unicode_are_refused_with_their_own_error(tool: str, raw: dict[str, object]) -> None:
    with pytest.raises(UnsafeArgumentError) as caught:
        bind_tool_request(tool, raw)
    assert isinstance(caught.value, UsageError)


def test_refusals_never_echo_the_argument_value() -> None:
    with pytest.raises(ToolRequestInvalidError) as caught:
        bind_tool_request("write_file", {"path": "a", "content": "sk-SECRET" * 70_000})
    assert "sk-SECRET" not in str(caught.value)
    with pytest.raises(UnsafeArgumentError) as unsafe:
        bind_tool_request("run_command", {"argv": ["echo", "sk-SECRET\x00"]})
    assert "sk-SECRET" not in str(unsafe.value)


@settings(database=None, max_examples=100, deadline=None)
@given(order=st.permutations(["pattern", "path", "glob", "ignore_case", "fixed_string", "max_results"]))
def test_binding_does_not_depend_on_the_order_the_model_sent(order: list[str]) -> None:
    values: dict[str, object] = {"pattern": "x", "path": "src", "glob": "*.py", "ignore_case": True,
                                 "fixed_string": False, "max_results": 9}
    reference = bind_tool_request("grep", values)
    assert bind_tool_request("grep", {name: values[name] for name in order}) == reference


@pytest.mark.parametrize(("written", "canonical"), [
    ("./pkg/mod.py", "pkg/mod.py"), ("pkg//mod.py", "pkg/mod.py"), ("pkg/./mod.py", "pkg/mod.py"),
    ("././pkg/mod.py", "pkg/mod.py"), ("src/", "src"), ("pkg/mod.py", "pkg/mod.py")])
def test_a_path_is_bound_in_its_one_canonical_spelling(written: str, canonical: str) -> None:
    """`./pkg/mod.py` names the same worktree file as `pkg/mod.py`: binding makes it that spelling, so the
    classifier, the operation identity and the worker's resolver (which takes only canonical paths) agree."""
    bound = bind_tool_request("write_file", {"path": written, "content": "x"})
    assert bound.value("path") == canonical


@pytest.mark.parametrize("written", ["../x", "./../x", "a/../../x", "/etc/passwd", "//server/x", "~/x", " a",
                                     "a /b", "C:/x", ".git/config", "./.git/config"])
def test_canonical_spelling_never_makes_a_path_that_may_leave_the_worktree_look_inside(written: str) -> None:
    """Only `.` components and repeated `/` go: `..`, absolute and home paths, spaces and `.git` stay for the
    classifier and the resolver to refuse."""
    value = bind_tool_request("read_file", {"path": written}).value("path")
    assert isinstance(value, str)
    assert value.split("/")[-1] == written.rsplit("/", maxsplit=1)[-1]
    assert (".." in value.split("/")) == (".." in written.split("/"))
    assert value.startswith(("/", "~")) == written.startswith(("/", "~"))
    assert (".git" in value) == (".git" in written)


def test_an_optional_path_naming_the_root_is_read_as_omitted_and_a_required_one_is_refused() -> None:
    for root in (".", "./", ".//."):
        assert bind_tool_request("list_directory", {"path": root}).value("path") is None
        with pytest.raises(ToolRequestInvalidError, match="must not be empty"):
            bind_tool_request("read_file", {"path": root})
