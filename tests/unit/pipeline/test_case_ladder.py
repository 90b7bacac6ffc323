"""Stage 7's input ladder (issue 17): the rung classifier that runs in the box — every value lands on exactly one
rung of its kind's ladder, deterministically, and no object makes it raise — codeflux's own examples of each rung,
the kinds read from annotations (the plan's declared signature first), the script shipped into the box, and the
examples it draws with Hypothesis (here with the test environment's Hypothesis handed in, as the box hands in its
own): ``from_type`` of the real annotation for the typical rung, codeflux's strategies for the others, every kept
example on its rung, the same seed the same examples, a class ``from_type`` cannot build reported."""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import hashlib
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import time
import typing
from collections.abc import Iterable, Sequence
from typing import Any

import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.atoms import Atom, AtomChange
from codeflux.pipeline import case_ladder
from codeflux.pipeline.case_ladder import (
    LADDER_LOADER_SCRIPT,
    RUNGS,
    ArgumentRecorder,
    draw_atom,
    draw_examples,
    draw_parameter,
    draw_rung,
    examples_of,
    hint_of_kind,
    ladder_of,
    ladder_script,
    rung_of,
    shown,
    type_text,
)
from codeflux.pipeline.case_synthesis import (
    job_text,
    kind_of_annotation,
    ladder_argv,
    ladder_job,
    parameter_ladders,
    write_ladder_files,
)

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
    job = job_text(ladder_job([], ["tests/test_a.py::test_x"], draw=True, seed=7))
    assert json.loads(job) == {"atoms": [], "max_tests": 3, "record": True, "draw": True, "seed": 7, "pytest_args": [
        "-p", "no:cacheprovider", "-p", "no:randomly", "tests/test_a.py::test_x"]}
    assert json.loads(job_text(ladder_job([], [], draw=True, seed=7)))["record"] is False  # no test: it only draws
    # the argv names what runs by digest (the script and the job are too long for an argv) and the overlay
    assert ladder_argv("/venv/bin/python", pathlib.Path("/tools/site"), job) == (
        "/venv/bin/python", "-c", LADDER_LOADER_SCRIPT, hashlib.sha256(script.encode()).hexdigest(),
        hashlib.sha256(job.encode()).hexdigest(), "/tools/site")
    assert ladder_argv("/venv/bin/python", None, job)[-1] == "-"


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


# ─── examples drawn with Hypothesis ─────────────────────────────────────────────────────────────────────────


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


class Opaque:
    def __init__(self, handle):  # type: ignore[no-untyped-def]  # no annotation: from_type cannot build it
        self.handle = handle


class Slow:
    def __init__(self, n: int) -> None:
        time.sleep(0.2)


def uses_slow(value: Slow, count: int) -> None:
    pass


def shifted(point: Point, by: int) -> Point:
    return Point(point.x + by, point.y + by)


class Sized:
    @property
    def size(self) -> int:
        return 1

    @size.setter
    def size(self, value: bytes) -> None:
        pass


NAMESPACE = {"Point": Point, "Opaque": Opaque}
COMMON = [
    ("int", int), ("float", float), ("str", str), ("bytes", bytes), ("bool", bool), ("pathlib.Path", pathlib.Path),
    ("list[int]", list[int]), ("dict[str, int]", dict[str, int]), ("set[str]", set[str]),
    ("tuple[int, ...]", tuple[int, ...]), ("Sequence[float]", Sequence[float]), ("Iterable[int]", Iterable[int]),
    ("Optional[int]", typing.Optional[int]), ("Point", Point),  # noqa: UP045 - the typing spelling on purpose
]


def drawn(annotation: str, hint: object, seed: int = 11) -> tuple[dict[str, Any], dict[str, Any]]:
    kind = kind_of_annotation(annotation)
    rungs: dict[str, Any] = {}
    draw_parameter(hypothesis, {"name": "p", "kind": kind}, hint, NAMESPACE, seed=seed, into=rungs)
    return kind, rungs


@pytest.mark.parametrize(("annotation", "hint"), COMMON, ids=[text for text, _ in COMMON])
def test_every_rung_of_a_common_type_is_drawn_from_type_for_typical_and_from_codefluxs_strategies_otherwise(
        annotation: str, hint: object) -> None:
    kind, rungs = drawn(annotation, hint)
    assert list(rungs) == list(ladder_of(kind))
    for rung, entry in rungs.items():
        assert "problem" not in entry, (rung, entry)
        assert 1 <= len(entry["examples"]) <= 3 and entry["drawn"] >= len(entry["examples"]), (rung, entry)
        assert entry["drawn"] - entry["dropped"] >= len(entry["examples"])
        assert all(len(text) <= 60 and " at 0x" not in text for text in entry["examples"])
        path = annotation == "pathlib.Path"
        assert entry["source"] == ("from_type" if rung == "typical" and not path else "codeflux"), (rung, entry)
    if annotation != "pathlib.Path":
        assert rungs["typical"]["strategy"] == f"from_type({type_text(hint)})"


def test_a_drawn_value_is_kept_only_on_its_own_rung_by_the_same_classifier() -> None:
    values = st.sampled_from([0, 5, 1, 2**31 - 1, 10**7, "x"])
    typical = draw_rung(hypothesis, values, {"kind": "int"}, "typical", seed=3, max_examples=50)
    assert typical["examples"] == ["5"] and typical["dropped"] >= 1
    boundary = draw_rung(hypothesis, values, {"kind": "int"}, "boundary", seed=3, max_examples=50)
    assert sorted(boundary["examples"]) == ["1", "2147483647"]
    # a value that lands on no rung drawn is dropped: nothing kept, nothing invented
    assert draw_rung(hypothesis, st.just(0), {"kind": "int"}, "large", seed=3)["examples"] == []


def test_the_same_seed_draws_the_same_examples_and_another_seed_other_ones() -> None:
    first = [drawn(annotation, hint, seed=41)[1] for annotation, hint in COMMON]
    assert [drawn(annotation, hint, seed=41)[1] for annotation, hint in COMMON] == first
    assert [drawn(annotation, hint, seed=42)[1] for annotation, hint in COMMON] != first


def test_from_type_builds_a_dataclass_and_a_class_it_cannot_build_is_reported_per_rung() -> None:
    _, point = drawn("Point", Point)
    assert point["typical"]["strategy"] == "from_type(Point)"
    assert all(text.startswith("Point(x=") for text in point["typical"]["examples"])
    assert point["wrong-type"]["examples"] and point["wrong-type"]["source"] == "codeflux"
    _, opaque = drawn("Opaque", Opaque)
    assert opaque["typical"]["problem"].startswith("ResolutionFailed: ") and "examples" not in opaque["typical"]
    assert opaque["wrong-type"]["examples"]  # the other rungs are still drawn
    _, unresolved = drawn("Decimal", hint_of_kind({"kind": "instance", "name": "Decimal"}, NAMESPACE))
    assert unresolved["typical"]["problem"].startswith("no type to build from_type on")


def test_the_contracts_kind_names_a_type_when_the_annotation_cannot_be_resolved() -> None:
    assert hint_of_kind({"kind": "int"}, {}) is int
    assert hint_of_kind(kind_of_annotation("dict[str, list[int]]"), {}) == dict[str, list[int]]
    assert hint_of_kind(kind_of_annotation("tuple[int, ...]"), {}) == tuple[int, ...]
    assert hint_of_kind(kind_of_annotation("Optional[Point]"), NAMESPACE) == typing.Optional[Point]  # noqa: UP045
    assert hint_of_kind(kind_of_annotation("Sequence[Missing]"), NAMESPACE) is collections.abc.Sequence
    assert hint_of_kind({"kind": "instance", "name": "Missing"}, NAMESPACE) is None
    assert hint_of_kind({"kind": "any"}, {}) is None
    assert [type_text(hint) for hint in (int, Point, list[int], typing.Optional[int])] == [  # noqa: UP045
        "int", "Point", "list[int]", "Optional[int]"]


def _atom(function: Any, params: list[dict[str, Any]]) -> dict[str, Any]:
    here = pathlib.Path(__file__).resolve()
    return {"key": function.__name__, "path": here.relative_to(here.parents[3]).as_posix(),
            "module": __name__, "local": function.__qualname__, "params": params}


def test_an_atoms_parameters_are_drawn_from_its_real_annotations_each_within_its_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(pathlib.Path(__file__).resolve().parents[3])
    plan_kind = {"kind": "instance", "name": "Point"}
    shifted_params = [{"name": "point", "star": "", "kind": plan_kind},
                      {"name": "by", "star": "", "kind": {"kind": "int"}}]
    found = draw_atom(hypothesis, _atom(shifted, shifted_params), root, seed=5, stop=time.monotonic() + 20)
    point = found["params"]["point"]
    assert (point["hint"], point["hint_from"]) == ("Point", "annotation")
    assert point["rungs"]["typical"]["examples"][0].startswith("Point(x=")
    monkeypatch.setattr(case_ladder, "DRAW_PARAMETER_S", 0.3)  # Slow() takes 0.2 s: the budget ends its draws
    started = time.monotonic()
    slow_params = [{"name": "value", "star": "", "kind": {"kind": "instance", "name": "Slow"}},
                   {"name": "count", "star": "", "kind": {"kind": "int"}}]
    slow = draw_atom(hypothesis, _atom(uses_slow, slow_params), root, seed=5, stop=time.monotonic() + 20)
    assert time.monotonic() - started < 3
    assert slow["params"]["value"]["problem"] == "its draws took longer than 0.3 s and were stopped"
    assert slow["params"]["count"]["rungs"]["degenerate"]["examples"] == ["0"]  # the next parameter is drawn
    late = draw_atom(hypothesis, _atom(uses_slow, slow_params), root, seed=5, stop=time.monotonic() - 1)
    assert late["params"]["count"]["problem"].startswith("not drawn: the run's 20 s for drawing were used")
    setter = {**_atom(shifted, [{"name": "value", "star": "", "kind": {"kind": "bytes"}}]), "key": "Sized.size",
              "local": "Sized.size", "line": Sized.size.fset.__code__.co_firstlineno}  # type: ignore[attr-defined]
    value = draw_atom(hypothesis, setter, root, seed=5, stop=time.monotonic() + 20)["params"]["value"]
    assert (value["hint"], value["hint_from"]) == ("bytes", "annotation")  # the setter's annotation, not the getter's
    missing = draw_atom(hypothesis, {**_atom(shifted, shifted_params), "local": "nowhere"}, root, seed=5, stop=0.0)
    assert missing == {"problem": f"nowhere is not reachable by name from {__name__}"}


def test_text_s_character_table_is_built_first_only_when_a_type_may_draw_text() -> None:
    root = str(pathlib.Path(__file__).resolve().parents[3])
    by = {"name": "by", "star": "", "kind": {"kind": "list", "item": {"kind": "int"}}}
    point = {"name": "point", "star": "", "kind": {"kind": "instance", "name": "Point"}}
    written: list[dict[str, Any]] = []
    numbers = draw_examples(hypothesis, {"seed": 2, "atoms": [_atom(shifted, [by])]}, root, written.append)
    assert "warm_up_s" not in numbers and numbers["atoms"]["shifted"]["params"]["by"]["rungs"]
    assert written[-1] is numbers and numbers["seed"] == 2 and numbers["hypothesis"] == hypothesis.__version__
    classes = draw_examples(hypothesis, {"seed": 2, "atoms": [_atom(shifted, [point, by])]}, root, written.append)
    assert isinstance(classes["warm_up_s"], float) and "warm_up_problem" not in classes


def test_an_examples_text_is_bounded_and_has_no_memory_address() -> None:
    assert shown(object()) == "<object object>"
    assert shown(len) == "<built-in function len>"
    assert shown("x" * 500) == "str of 500 characters" and len(shown(list(range(50)))) == 60


def _run_box(tmp_path: pathlib.Path, job: dict[str, Any], *python_options: str, job_file: str | None = None
             ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    text = job_text(job)
    assert write_ladder_files(tmp_path / "tmp", job_file if job_file is not None else text)
    argv = ladder_argv(sys.executable, None, text)
    done = subprocess.run([argv[0], *python_options, *argv[1:]], cwd=tmp_path / "repo", capture_output=True,
                          text=True, env={"TMPDIR": str(tmp_path / "tmp"), "PATH": os.defpath}, check=False, timeout=60)
    report = tmp_path / "tmp" / "codeflux-checks" / "case-examples.json"
    return done, json.loads(report.read_text()) if report.is_file() else None


def test_the_box_script_runs_only_the_files_its_argv_names_and_says_when_hypothesis_is_missing(
        tmp_path: pathlib.Path) -> None:
    (tmp_path / "repo" / "shapes").mkdir(parents=True)
    (tmp_path / "repo" / "shapes" / "__init__.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Box:\n    size: int\n\n\n"
        "def area(box: Box, scale: float) -> float:\n    return box.size * scale\n")
    atom = {"key": "shapes.area", "path": "shapes/__init__.py", "line": 9, "name": "area", "module": "shapes",
            "local": "area", "params": [{"name": "box", "star": "", "kind": {"kind": "instance", "name": "Box"}},
                                        {"name": "scale", "star": "", "kind": {"kind": "float"}}]}
    job = ladder_job([atom], [], draw=True, seed=9)  # no test: the run only draws (the module imported by name)

    done, report = _run_box(tmp_path, job)

    assert done.returncode == 0, done.stderr
    assert report is not None and report["seed"] == 9 and report["hypothesis"] == hypothesis.__version__
    box = report["atoms"]["shapes.area"]["params"]["box"]
    assert box["hint"] == "Box" and box["rungs"]["typical"]["examples"][0].startswith("Box(size=")
    assert (tmp_path / "tmp" / "codeflux-hypothesis-home").is_dir()  # Hypothesis's home: the task's TMPDIR
    again = _run_box(tmp_path, job)[1]
    assert again is not None and again["atoms"] == report["atoms"]  # the same seed, the same examples
    # a job file that is not the one the argv names is refused before anything runs
    refused, nothing = _run_box(tmp_path, job, job_file=job_text({**job, "seed": 10}))
    assert refused.returncode == 1 and "case-ladder-job.json is not the one codeflux wrote" in refused.stderr
    assert nothing is None
    # without site-packages (no Hypothesis) the run still ends well and says so
    plain, missing = _run_box(tmp_path, job, "-S")
    assert plain.returncode == 0, plain.stderr
    assert missing == {"hypothesis": None, "seed": 9,
                       "problem": "Hypothesis is not importable in the box (ModuleNotFoundError)"}


def test_the_draw_timer_never_raises_where_the_exception_would_be_dropped() -> None:
    """A timer that fires inside Hypothesis' garbage-collector callback (seen on a loaded machine) must not raise
    there — the exception would be printed and dropped, the draws going on — but fire again a moment later."""
    def gc_callback() -> None:
        case_ladder._over_budget(signal.SIGALRM, sys._getframe())

    previous = signal.signal(signal.SIGALRM, signal.SIG_IGN)
    try:
        gc_callback()  # no DrawOverBudget here …
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.01  # … the timer is armed again instead
        with pytest.raises(case_ladder.DrawOverBudget):
            case_ladder._over_budget(signal.SIGALRM, sys._getframe())  # anywhere else it raises
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
