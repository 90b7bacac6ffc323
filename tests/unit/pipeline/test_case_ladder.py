"""Stage 7's input ladder (issue 17): the rung classifier that runs in the box — every value lands on exactly one
rung of its kind's ladder, deterministically, and no object makes it raise — codeflux's own examples of each rung,
the kinds read from annotations (the plan's declared signature first), and the script shipped into the box."""

from __future__ import annotations

import ast
import math
import pathlib
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.atoms import Atom, AtomChange
from codeflux.pipeline import case_ladder
from codeflux.pipeline.case_ladder import RUNGS, ArgumentRecorder, examples_of, ladder_of, ladder_script, rung_of
from codeflux.pipeline.case_synthesis import kind_of_annotation, ladder_argv, parameter_ladders

BASE_KINDS: list[dict[str, Any]] = [
    {"kind": name} for name in ("int", "float", "bool", "str", "bytes", "path", "none", "callable", "any")
] + [{"kind": "instance", "name": "Config"}, {"kind": "instance", "name": "int"}]


def _containers(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda name, item: {"kind": name, "item": item},
                  st.sampled_from(["list", "tuple", "set", "sequence", "iterable"]), inner),
        st.builds(lambda key, value: {"kind": "dict", "key": key, "value": value}, inner, inner),
        st.lists(inner, min_size=2, max_size=3).map(lambda members: {"kind": "union", "of": members}),
    )


KINDS = st.recursive(st.sampled_from(BASE_KINDS), _containers, max_leaves=4)
PLAIN = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**300), max_value=2**300),
                  st.floats(allow_nan=True, allow_infinity=True), st.text(), st.binary(),
                  st.builds(pathlib.PurePosixPath, st.text(max_size=20)))
VALUES = st.one_of(st.recursive(PLAIN, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(st.text(max_size=3), inner, max_size=3),
    st.frozensets(st.integers(), max_size=3)), max_leaves=8), st.from_type(object))


@settings(max_examples=200, deadline=None)
@given(KINDS, VALUES)
def test_every_value_lands_on_exactly_one_rung_of_its_kinds_ladder_deterministically(
        kind: dict[str, Any], value: object) -> None:
    rung = rung_of(kind, value)
    ladder = ladder_of(kind)
    assert rung in (ladder or RUNGS)
    assert rung_of(kind, value) == rung  # the same value, the same rung
    assert list(ladder) == [r for r in RUNGS if r in ladder]  # in the ladder's order, once each


class Hostile:
    """An object whose every protocol raises: it must be classified, never crash the classifier (or the test)."""

    def __len__(self) -> int:
        raise RuntimeError("len")

    def __iter__(self) -> Any:
        raise RuntimeError("iter")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")

    def __hash__(self) -> int:
        raise RuntimeError("hash")

    def __fspath__(self) -> str:
        raise RuntimeError("fspath")

    def __bool__(self) -> bool:
        raise RuntimeError("bool")


class HostileList(list[int]):
    def __len__(self) -> int:
        raise RuntimeError("len")


@pytest.mark.parametrize("kind", [*BASE_KINDS, {"kind": "list", "item": {"kind": "int"}}, {"kind": "dict"},
                                  {"kind": "union", "of": [{"kind": "int"}, {"kind": "none"}]}],
                         ids=str)
def test_objects_whose_methods_raise_are_classified_without_raising(kind: dict[str, Any]) -> None:
    for value in (Hostile(), HostileList([1, 2])):
        assert rung_of(kind, value) in (ladder_of(kind) or RUNGS)
    assert rung_of({"kind": "path"}, Hostile()) == "pathological"  # a path whose __fspath__ raises
    assert rung_of({"kind": "list"}, HostileList([1])) == "pathological"


@pytest.mark.parametrize(("annotation", "value", "rung"), [
    ("int", 7, "typical"), ("int", 0, "degenerate"), ("int", -1, "boundary"), ("int", 2**63 - 1, "boundary"),
    ("int", 10**6, "large"), ("int", 2**129, "pathological"), ("int", True, "wrong-type"), ("int", "3", "wrong-type"),
    ("float", 2.5, "typical"), ("float", 3, "typical"), ("float", -0.0, "degenerate"), ("float", 5e-324, "boundary"),
    ("float", 1e16, "large"), ("float", math.nan, "pathological"), ("float", 2**1100, "pathological"),
    ("bool", False, "degenerate"), ("bool", 1, "wrong-type"),
    ("str", "", "degenerate"), ("str", "ok go", "typical"), ("str", " x", "boundary"), ("str", "ü", "boundary"),
    ("str", "x" * 10_000, "large"), ("str", "a\x00", "pathological"), ("str", "x" * 9_999 + "\u200b", "pathological"),
    ("bytes", bytearray(b"ab"), "typical"), ("bytes", b"\x00", "boundary"), ("bytes", b"\xff\xfe", "pathological"),
    ("list[int]", [], "degenerate"), ("list[int]", [1], "boundary"), ("list[int]", [1, 2], "typical"),
    ("list[int]", [1, "2"], "pathological"), ("list[int]", (1, 2), "wrong-type"), ("list", [1, "2"], "typical"),
    ("Sequence[str]", "abc", "wrong-type"), ("Sequence[str]", ("a", "b"), "typical"),
    ("Iterable[int]", iter([1, 2]), "typical"), ("dict[str, int]", {"a": "b"}, "pathological"),
    ("Mapping[str, int]", {"a": 1}, "boundary"), ("set[int]", frozenset(range(10_000)), "large"),
    ("Path", pathlib.PurePosixPath("a/b.txt"), "typical"), ("Path", "a/b.txt", "wrong-type"),
    ("Path", pathlib.PurePosixPath("."), "degenerate"), ("Path", pathlib.PurePosixPath("/"), "boundary"),
    ("Path", pathlib.PurePosixPath("../x"), "pathological"),
    ("Optional[int]", None, "degenerate"), ("int | None", 5, "typical"), ("int | None", "5", "wrong-type"),
    ("str | Path", pathlib.PurePosixPath("x"), "typical"), ("Config", 3, "wrong-type"),
    ("Callable[[int], int]", len, "typical"), ("Callable[[int], int]", 3, "wrong-type"),
])
def test_the_rules_put_each_value_on_its_rung(annotation: str, value: object, rung: str) -> None:
    assert rung_of(kind_of_annotation(annotation), value) == rung


def test_an_instance_is_judged_by_the_class_names_in_its_types_mro() -> None:
    class Config:
        pass

    class Special(Config):
        pass

    assert rung_of(kind_of_annotation("settings.Config"), Special()) == "typical"
    assert ladder_of(kind_of_annotation("Config")) == ("typical", "wrong-type")


@pytest.mark.parametrize("annotation", ["int", "float", "bool", "str", "bytes", "Path", "list[int]", "tuple[str, ...]",
                                        "set[str]", "dict[str, float]", "Sequence[bytes]", "Optional[int]",
                                        "str | Path", "Config", "Callable[[], None]", "Literal['a', 'b']"])
def test_every_rung_has_codeflux_examples_and_each_is_on_its_rung(annotation: str) -> None:
    kind = kind_of_annotation(annotation)
    for rung in ladder_of(kind):
        shown = examples_of(kind, rung)
        assert shown, (annotation, rung)
        assert all(len(text) <= 60 for text in shown)
    assert examples_of(kind, "no-such-rung") == ()
    assert examples_of(kind_of_annotation("set[str]"), "typical") == examples_of(kind_of_annotation("set[str]"),
                                                                                   "typical")


@pytest.mark.parametrize(("annotation", "kind"), [
    ("int", {"kind": "int"}), ("'int'", {"kind": "int"}),
    ("typing.Optional[str]", {"kind": "union", "of": [{"kind": "str"}, {"kind": "none"}]}),
    ("Union[int, None, int]", {"kind": "union", "of": [{"kind": "int"}, {"kind": "none"}]}),
    ("Annotated[bytes, 'x']", {"kind": "bytes"}), ("List[int]", {"kind": "list", "item": {"kind": "int"}}),
    ("tuple[int, str]", {"kind": "tuple", "item": {"kind": "union", "of": [{"kind": "int"}, {"kind": "str"}]}}),
    ("Dict[str, Any]", {"kind": "dict", "key": {"kind": "str"}, "value": {"kind": "any"}}),
    ("os.PathLike[str]", {"kind": "path"}), ("Literal[1, 2]", {"kind": "int"}), ("Any", {"kind": "any"}),
    ("int | Any", {"kind": "any"}), ("object", {"kind": "any"}), ("T", {"kind": "instance", "name": "T"}),
    ("not valid (", {"kind": "any"}), ("type[Config]", {"kind": "instance", "name": "type"}),
])
def test_annotations_become_kinds(annotation: str, kind: dict[str, Any]) -> None:
    assert kind_of_annotation(annotation) == kind


def atom(name: str, first_line: int, *, method: bool = False) -> Atom:
    return Atom(path="pkg/m.py", qualified_name=f"pkg.m.{name}", local_name=name, change=AtomChange.ADDED,
                first_line=first_line, last_line=first_line + 1, signature="", changed=(), is_method=method,
                is_async=False)


SOURCE = '''from typing import TypeVar

T = TypeVar("T")


def f(a, b: str, c=3, *rest: int, key: T, flag=False, **options: bytes):
    return a


class C:
    @staticmethod
    def s(self, x: float):
        return x

    def m(self, y: list[int]):
        return y
'''


def test_the_plans_declared_annotation_wins_then_the_codes_then_a_literal_default() -> None:
    ladders = parameter_ladders(SOURCE, atom("f", 6), "def f(a: int, b: bytes, c, *rest, key, flag, **options)",
                                "plan step 2")
    assert ladders is not None
    assert [(p.star + p.name, p.annotation, p.annotation_from, p.kind["kind"]) for p in ladders] == [
        ("a", "int", "plan step 2", "int"), ("b", "bytes", "plan step 2", "bytes"),
        ("c", None, "its literal default", "int"), ("*rest", "int", "the code", "int"),
        ("key", "T", "the code", "any"), ("flag", None, "its literal default", "bool"),
        ("**options", "bytes", "the code", "bytes")]
    unparsable = parameter_ladders(SOURCE, atom("f", 6), "f(a: int", "plan step 2")
    assert unparsable is not None and unparsable[0].kind == {"kind": "any"} and unparsable[0].annotation_from == "none"


def test_self_and_cls_are_no_inputs_except_in_a_static_method() -> None:
    static = parameter_ladders(SOURCE, atom("C.s", 11, method=True), None)
    method = parameter_ladders(SOURCE, atom("C.m", 15, method=True), None)
    assert static is not None and [p.name for p in static] == ["self", "x"]
    assert method is not None and [(p.name, p.kind) for p in method] == [
        ("y", {"kind": "list", "item": {"kind": "int"}})]
    assert parameter_ladders(SOURCE, atom("g", 6), None) is None  # no such definition


def test_the_box_runs_this_modules_own_text_standard_library_only() -> None:
    script = ladder_script()
    source = pathlib.Path(case_ladder.__file__).read_text(encoding="utf-8")
    assert script.startswith(source) and script.endswith("sys.exit(record_main(sys.argv))\n")

    def imported(text: str) -> set[str]:
        tree = ast.parse(text)
        names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
        return names | {str(node.module).split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}

    assert imported(source) <= set(sys.stdlib_module_names) | {"__future__"}  # the classifier needs no overlay tool
    assert imported(script) - imported(source) - set(sys.stdlib_module_names) == {"pytest", "hypothesis"}  # box only
    compile(script, "<case-ladder>", "exec")
    argv = ladder_argv("/venv/bin/python", {"atoms": []}, ["tests/test_a.py::test_x"])
    assert argv[:3] == ("/venv/bin/python", "-c", script) and argv[3] == '{"atoms":[]}'
    assert argv[4:] == ("--", "-p", "no:cacheprovider", "-p", "no:randomly", "tests/test_a.py::test_x")


def countdown(n: int, *rest: str) -> int:
    return 0 if n <= 0 else countdown(n - 1, *rest)


def sequence(items: list[int]) -> Any:
    yield from items


def test_the_recorder_classifies_each_test_call_once_outside_recursion_and_only_while_a_test_runs() -> None:
    here = pathlib.Path(__file__).resolve()
    root = here.parents[3]
    path = here.relative_to(root).as_posix()
    job = {"max_tests": 1, "atoms": [
        {"key": "countdown", "path": path, "line": countdown.__code__.co_firstlineno, "name": "countdown",
         "params": [{"name": "n", "star": "", "kind": {"kind": "int"}},
                    {"name": "rest", "star": "*", "kind": {"kind": "str"}}]},
        {"key": "sequence", "path": path, "line": sequence.__code__.co_firstlineno, "name": "sequence",
         "params": [{"name": "items", "star": "", "kind": {"kind": "list", "item": {"kind": "int"}}}]}]}
    recorder = ArgumentRecorder(job, str(root))
    previous = sys.getprofile()
    sys.setprofile(recorder.profile)
    try:
        countdown(-3)  # no test is running: not recorded
        recorder.test = "t1"
        countdown(5, "", "x")  # recursion to 0 is the atom's own, not the test's
        assert list(sequence([1, 2, 3])) == [1, 2, 3]  # a generator: recorded when it starts, not at each resume
        recorder.test = "t2"
        countdown(0)
    finally:
        sys.setprofile(previous)
    down = recorder.summary["countdown"]
    assert down["calls"] == 2 and down["tests"] == ["t1", "t2"]
    assert down["params"]["n"] == {"typical": {"count": 1, "tests": ["t1"]},
                                   "degenerate": {"count": 1, "tests": ["t2"]}}
    assert down["params"]["rest"] == {"degenerate": {"count": 1, "tests": ["t1"]},
                                      "boundary": {"count": 1, "tests": ["t1"]}}
    assert recorder.summary["sequence"] == {"calls": 1, "tests": ["t1"], "params": {
        "items": {"typical": {"count": 1, "tests": ["t1"]}}}}
