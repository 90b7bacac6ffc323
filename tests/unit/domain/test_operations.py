"""Operation identity: canonical JSON, normalization, refusals, and the distinctness properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.errors import InvalidValueError, UnsafeArgumentError, UsageError
from codeflux.domain.ids import RunId, TaskId
from codeflux.domain.operations import (
    ExecutablePin,
    Operation,
    OperationIdentity,
    canonical_operation_json,
    derive_operation_identity,
    describe_operation,
    in_task_temp_directory,
    normalize_working_directory,
    normalize_worktree_directory,
    parse_canonical_operation_json,
    task_temp_relative,
)
from codeflux.domain.tools import bind_tool_request

TASK = TaskId.parse("tsk_0123456789abcdef")
OTHER_TASK = TaskId.parse("tsk_fedcba9876543210")
SHA_A = "a" * 64
SHA_B = "b" * 64
CURL = ExecutablePin(path="/usr/bin/curl", sha256=SHA_A)


def operation(**changes: object) -> Operation:
    fields: dict[str, object] = {
        "task_id": TASK,
        "tool": "run_command",
        "arguments": (("argv", ("curl", "https://example.com")),),
        "cwd": ".",
        "effects": ("subprocess",),
        "executable": CURL,
        "env": (),
        "stdin_sha256": None,
    }
    fields.update(changes)
    return Operation(**fields)  # type: ignore[arg-type]


# ─── ids ──────────────────────────────────────────────────────────────────────────────────────────


def test_a_task_id_round_trips_through_its_prefixed_string() -> None:
    assert str(TaskId.parse("tsk_0123456789abcdef")) == "tsk_0123456789abcdef"
    assert TaskId.from_entropy(bytes(range(16))).value == "tsk_000102030405060708090a0b0c0d0e0f"


@pytest.mark.parametrize("text", ["run_0123456789abcdef", "tsk_", "tsk_SHOUTING12", "tsk0123456789", "", "tsk_a b"])
def test_a_task_id_refuses_anything_but_its_own_prefix_and_body(text: str) -> None:
    with pytest.raises(InvalidValueError):
        TaskId.parse(text)


def test_ids_of_different_kinds_are_different_types_and_never_equal() -> None:
    run = RunId.parse("run_0123456789abcdef")
    assert run != TASK
    with pytest.raises(InvalidValueError):
        RunId.parse(str(TASK))


def test_entropy_for_a_new_id_must_be_sixteen_bytes() -> None:
    with pytest.raises(InvalidValueError):
        TaskId.from_entropy(b"short")


# ─── identity ─────────────────────────────────────────────────────────────────────────────────────


def test_the_identity_is_the_sha256_of_the_canonical_json_written_with_an_op_prefix() -> None:
    identity = derive_operation_identity(operation())
    assert str(identity).startswith("op_")
    assert len(identity.digest) == 64
    assert OperationIdentity.parse(str(identity)) == identity


def test_the_canonical_json_has_sorted_keys_no_spaces_and_only_ascii() -> None:
    text = canonical_operation_json(operation(arguments=(("argv", ("echo", "héllo wörld")),)))
    document = json.loads(text)
    assert list(document) == sorted(document)
    assert text == json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert text.isascii()
    assert document["schema"] == 1
    assert document["executable"] == {"path": "/usr/bin/curl", "sha256": SHA_A}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("task_id", OTHER_TASK),
        ("tool", "grep"),
        ("arguments", (("argv", ("curl", "https://example.org")),)),
        ("arguments", (("argv", ("https://example.com", "curl")),)),
        ("arguments", (("argv", ("curl", "https://example.com", "-o", "x")),)),
        ("arguments", (("args", ("curl", "https://example.com")),)),
        ("cwd", "sub"),
        ("effects", ("network", "subprocess")),
        ("executable", ExecutablePin(path="/usr/local/bin/curl", sha256=SHA_A)),
        ("executable", ExecutablePin(path="/usr/bin/curl", sha256=SHA_B)),
        ("executable", None),
        ("env", (("LANG", "C"),)),
        ("stdin_sha256", SHA_B),
    ],
)
def test_every_field_of_an_operation_changes_its_identity(field: str, value: object) -> None:
    assert derive_operation_identity(operation(**{field: value})) != derive_operation_identity(operation())


def test_arguments_moving_between_args_and_effects_cannot_collide() -> None:
    # The reference system's NUL-joined form made these two identical.
    first = operation(arguments=(("a", "x"), ("b", "network")), effects=("subprocess",))
    second = operation(arguments=(("a", "x"),), effects=("network", "subprocess"))
    assert derive_operation_identity(first) != derive_operation_identity(second)


def test_an_omitted_optional_argument_cannot_shift_another_into_its_place() -> None:
    first = operation(tool="read_file", executable=None, arguments=(("path", "a"), ("line_count", 5)))
    second = operation(tool="read_file", executable=None, arguments=(("path", "a"), ("start_line", 5)))
    assert derive_operation_identity(first) != derive_operation_identity(second)


def test_text_integer_and_boolean_values_never_share_an_identity() -> None:
    identities = {
        derive_operation_identity(operation(arguments=(("n", value),)))
        for value in ("1", 1, True, ("1",), "true", 0, False)
    }
    assert len(identities) == 7
    assert operation(arguments=(("n", 1),)) != operation(arguments=(("n", True),))


def test_effects_and_environment_are_sets_so_their_order_does_not_matter() -> None:
    first = operation(effects=("b", "a", "a"), env=(("Z", "1"), ("A", "2")))
    second = operation(effects=("a", "b"), env=(("A", "2"), ("Z", "1")))
    assert first == second
    assert derive_operation_identity(first) == derive_operation_identity(second)


# ─── normalization and refusals ───────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(("written", "normal"), [(".", "."), ("./", "."), ("a//b/", "a/b"), ("./a/./b", "a/b")])
def test_the_working_directory_is_normalized_relative_to_the_worktree(written: str, normal: str) -> None:
    assert normalize_worktree_directory(written) == normal
    assert operation(cwd=written).cwd == normal


@pytest.mark.parametrize("cwd", ["", "/abs", "..", "a/../b", "a\\b", "C:x", ".git", "a/.GIT/hooks"])
def test_a_working_directory_that_could_leave_the_worktree_is_refused(cwd: str) -> None:
    with pytest.raises(InvalidValueError):
        normalize_worktree_directory(cwd)


def test_a_working_directory_under_the_task_tmpdir_is_kept_as_fixed_text() -> None:
    """``$TMPDIR/<path>`` names no host path: the identity's cwd holds exactly that text, for every task alike."""
    cwd = "$TMPDIR/codeflux-scratch/base"
    first, second = operation(cwd=cwd), operation(cwd=cwd, task_id=OTHER_TASK)
    assert first.cwd == second.cwd == cwd == in_task_temp_directory("codeflux-scratch/base")
    assert json.loads(canonical_operation_json(first))["cwd"] == cwd
    assert parse_canonical_operation_json(canonical_operation_json(first)) == first
    assert task_temp_relative(cwd) == ("codeflux-scratch", "base")
    assert task_temp_relative("codeflux-scratch/base") is None  # a worktree folder of that name stays one
    assert derive_operation_identity(first) != derive_operation_identity(operation(cwd="codeflux-scratch/base"))


@pytest.mark.parametrize("cwd", ["$TMPDIR", "$TMPDIR/", "$TMPDIR/..", "$TMPDIR/../x", "$TMPDIR/a/../../x",
                                 "$TMPDIR//x", "$TMPDIR/./x", "$TMPDIR/x/", "$TMPDIR/a\\b", "$TMPDIR/a\nb",
                                 "$HOME/x", "$TMPDIRx/y", "${TMPDIR}/x", "$TMPDIR/" + "a" * 4096])
def test_a_working_directory_that_could_leave_the_task_tmpdir_is_refused(cwd: str) -> None:
    with pytest.raises(InvalidValueError, match="working directory"):
        normalize_working_directory(cwd)
    with pytest.raises(InvalidValueError, match="working directory"):
        operation(cwd=cwd)


def test_describing_an_operation_refuses_a_bad_working_directory_before_any_identity() -> None:
    request = bind_tool_request("run_command", {"argv": ["pytest"]})
    with pytest.raises(InvalidValueError, match=r"'\.\.'"):
        describe_operation(request, task_id=TASK, executable=CURL, working_directory="$TMPDIR/../etc")
    described = describe_operation(request, task_id=TASK, executable=CURL,
                                   working_directory="$TMPDIR/codeflux-scratch/base")
    assert described.cwd == "$TMPDIR/codeflux-scratch/base"
    with pytest.raises(InvalidValueError, match="worktree root only"):
        describe_operation(bind_tool_request("git_status", {}), task_id=TASK,
                           working_directory="$TMPDIR/codeflux-scratch/base")


@pytest.mark.parametrize(
    "changes",
    [
        {"arguments": (("argv", ("curl", "https://x\x00.evil")),)},
        {"arguments": (("path", "a\x00b"),)},
        {"env": (("LANG", "C\x00"),)},
        {"env": (("LA\x00NG", "C"),)},
        {"cwd": "a\x00"},
        {"tool": "run\x00command"},
        {"arguments": (("path", "\ud800"),)},
    ],
)
def test_nul_bytes_and_broken_unicode_are_refused_anywhere_in_an_operation(changes: dict[str, object]) -> None:
    with pytest.raises(UnsafeArgumentError):
        operation(**changes)


def test_a_nul_byte_in_the_executable_path_is_refused() -> None:
    with pytest.raises(UnsafeArgumentError):
        ExecutablePin(path="/usr/bin/curl\x00", sha256=SHA_A)


@pytest.mark.parametrize(
    "changes",
    [
        {"arguments": (("n", 1.5),)},
        {"arguments": (("argv", ["curl"]),)},
        {"arguments": (("argv", ("curl", 3)),)},
        {"arguments": (("a", "x"), ("a", "y"))},
        {"env": (("A", "1"), ("A", "2"))},
        {"stdin_sha256": "not-a-digest"},
        {"tool": "Run Command"},
    ],
)
def test_values_outside_the_defined_types_are_refused(changes: dict[str, object]) -> None:
    with pytest.raises(InvalidValueError):
        operation(**changes)


def test_an_executable_must_be_an_absolute_path_with_a_sha256() -> None:
    with pytest.raises(InvalidValueError):
        ExecutablePin(path="curl", sha256=SHA_A)
    with pytest.raises(InvalidValueError):
        ExecutablePin(path="/usr/bin/curl", sha256="A" * 64)


# ─── describing a bound request ───────────────────────────────────────────────────────────────────


def test_a_described_operation_takes_tool_order_cwd_and_effects_from_the_descriptor() -> None:
    request = bind_tool_request("read_file", {"line_count": 5, "path": "src/a.py"})
    described = describe_operation(request, task_id=TASK)
    assert described.tool == "read_file"
    assert described.arguments == (("path", "src/a.py"), ("line_count", 5))
    assert described.cwd == "."
    assert described.effects == ("repository-read",)
    assert described.executable is None


def test_a_command_operation_requires_the_resolved_executable() -> None:
    request = bind_tool_request("run_command", {"argv": ["curl", "https://example.com"]})
    with pytest.raises(InvalidValueError):
        describe_operation(request, task_id=TASK)
    described = describe_operation(request, task_id=TASK, executable=CURL, env={"LANG": "C"})
    assert described.executable == CURL
    assert described.env == (("LANG", "C"),)
    assert described.effects == ("subprocess",)


def test_a_file_tool_operation_refuses_an_executable() -> None:
    request = bind_tool_request("git_status", {})
    with pytest.raises(UsageError):
        describe_operation(request, task_id=TASK, executable=CURL)


def test_the_same_request_in_another_task_is_another_operation() -> None:
    request = bind_tool_request("run_command", {"argv": ["curl", "https://example.com"]})
    first = describe_operation(request, task_id=TASK, executable=CURL)
    second = describe_operation(request, task_id=OTHER_TASK, executable=CURL)
    assert derive_operation_identity(first) != derive_operation_identity(second)


# ─── canonical json parsing ───────────────────────────────────────────────────────────────────────


def test_canonical_json_parses_back_into_the_same_operation() -> None:
    text = canonical_operation_json(operation())
    assert parse_canonical_operation_json(text) == operation()


@pytest.mark.parametrize(
    "mangle",
    [
        lambda text: text.replace(",", ", ", 1),
        lambda text: text.replace('"schema":1', '"schema":2'),
        lambda text: text.replace('"schema":1', '"schema":1.0'),
        lambda text: text.replace('"cwd":"."', '"cwd":".","cwd":"."'),
        lambda text: text.replace('"cwd":"."', '"cwd":"./"'),
        lambda text: text[:-1],
        lambda text: text.replace('"stdin_sha256":null,', ""),
    ],
)
def test_non_canonical_or_foreign_json_is_refused(mangle: object) -> None:
    text = canonical_operation_json(operation())
    assert callable(mangle)
    with pytest.raises(InvalidValueError):
        parse_canonical_operation_json(mangle(text))


# ─── properties ───────────────────────────────────────────────────────────────────────────────────

_SAFE_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12)
_SMALL_TEXT = st.sampled_from(["", "1", "a", "a b", "network", "ü", '"', "\\"])
_HEX = st.from_regex(r"[0-9a-f]{64}", fullmatch=True)
_NAME = st.sampled_from(["a", "b", "path", "argv", "n"])
_VALUE = st.one_of(
    _SMALL_TEXT,
    _SAFE_TEXT,
    st.integers(min_value=-2, max_value=2),
    st.integers(),
    st.booleans(),
    st.lists(_SMALL_TEXT, max_size=3).map(tuple),
)
_OPERATIONS = st.builds(
    Operation,
    task_id=st.sampled_from([TASK, OTHER_TASK]),
    tool=st.sampled_from(["run_command", "read_file", "grep"]),
    arguments=st.lists(st.tuples(_NAME, _VALUE), max_size=4, unique_by=lambda pair: pair[0]).map(tuple),
    cwd=st.lists(st.sampled_from(["src", "a", "b-c"]), max_size=2).map(lambda parts: "/".join(parts) or "."),
    effects=st.lists(st.sampled_from(["subprocess", "network", "repository-read"]), max_size=3).map(tuple),
    executable=st.none() | st.builds(ExecutablePin, path=st.sampled_from(["/bin/a", "/bin/b"]),
                                     sha256=st.sampled_from([SHA_A, SHA_B])),
    env=st.dictionaries(st.sampled_from(["A", "B"]), _SMALL_TEXT, max_size=2).map(lambda d: tuple(d.items())),
    stdin_sha256=st.none() | st.sampled_from([SHA_A, SHA_B]) | _HEX,
)


@settings(database=None, max_examples=400, deadline=None)
@given(first=_OPERATIONS, second=_OPERATIONS)
def test_distinct_operations_never_share_an_identity_and_identical_ones_always_do(
    first: Operation, second: Operation
) -> None:
    same_identity = derive_operation_identity(first) == derive_operation_identity(second)
    assert same_identity == (first == second)
    assert same_identity == (canonical_operation_json(first) == canonical_operation_json(second))


@settings(database=None, max_examples=200, deadline=None)
@given(original=_OPERATIONS)
def test_rebuilding_an_operation_from_its_fields_gives_the_same_identity(original: Operation) -> None:
    rebuilt = Operation(
        task_id=TaskId.parse(str(original.task_id)),
        tool=str(original.tool),
        arguments=tuple((name, value) for name, value in original.arguments),
        cwd=f"./{original.cwd}/",
        effects=tuple(reversed(original.effects)),
        executable=original.executable,
        env=tuple(reversed(original.env)),
        stdin_sha256=original.stdin_sha256,
    )
    assert derive_operation_identity(rebuilt) == derive_operation_identity(original)


@settings(database=None, max_examples=300, deadline=None)
@given(original=_OPERATIONS)
def test_canonical_json_round_trips_for_every_operation(original: Operation) -> None:
    text = canonical_operation_json(original)
    parsed = parse_canonical_operation_json(text)
    assert parsed == original
    assert canonical_operation_json(parsed) == text
