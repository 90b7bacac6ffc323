"""The rules of the base-revision run that need no process: which files are tests, and what discrimination
means for each kind of example (issue 14 item 6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.acceptance import AcceptanceExample
from codeflux.pipeline.base_revision import BaseRun, base_overlay, command_key, discrimination_of, is_test_file


@pytest.mark.parametrize(("path", "test"), [
    ("tests/test_calc.py", True), ("pkg/test_thing.py", True), ("pkg/thing_test.py", True), ("conftest.py", True),
    ("tests/data/input.json", True), ("pkg/calc.py", False), ("pkg/testing.py", False), ("README.md", False),
])
def test_test_files_are_known_by_pytest_usual_names(path: str, test: bool) -> None:
    assert is_test_file(path) is test


def test_the_overlay_is_the_diffs_test_files_and_each_named_examples_file() -> None:
    changed = [{"path": "pkg/calc.py", "kind": "modified"}, {"path": "tests/test_calc.py", "kind": "added"}]
    examples = [AcceptanceExample(test="checks/spec.py::test_it"), AcceptanceExample(argv=("python3", "-V"))]
    assert base_overlay(changed, examples) == ("checks/spec.py", "tests/test_calc.py")


MEASURED = BaseRun(key="k", purpose="discrimination", measured=True, detail="measured", tests_measured=True,
                   statuses={"t.py::a": "passed", "t.py::b": "failed"},
                   commands={command_key(("prog",)): {"exit_code": 0, "stdout_lines": ["3"]}})


@pytest.mark.parametrize(("example", "expected"), [
    (AcceptanceExample(test="t.py::a"), False),
    (AcceptanceExample(test="t.py::b"), True),
    (AcceptanceExample(test="t.py::missing"), True),  # not collected on the base: the change adds it
    (AcceptanceExample(argv=("prog",), expected=("3",)), False),
    (AcceptanceExample(argv=("prog",), expected=("4",)), True),
    (AcceptanceExample(argv=("other",)), None),  # never run on the base: not measured, never claimed
])
def test_an_example_discriminates_only_when_it_does_not_hold_on_the_base(
        example: AcceptanceExample, expected: bool | None) -> None:
    discriminates, detail = discrimination_of(example, MEASURED)
    assert discriminates is expected
    assert ("not shown to need this change" in detail) is (expected is False)


@given(st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=40))
def test_without_a_measured_base_run_nothing_is_claimed(name: str) -> None:
    example = AcceptanceExample(argv=(name,))
    for base in (None, BaseRun(key="k", purpose="discrimination", measured=False, detail="not measured: refused")):
        discriminates, detail = discrimination_of(example, base)
        assert discriminates is None and detail.startswith("not measured")


def test_a_base_run_survives_the_evidence_round_trip() -> None:
    assert BaseRun.from_evidence(MEASURED.to_evidence(), attempt=3) == MEASURED.__class__(
        **{**{f: getattr(MEASURED, f) for f in MEASURED.__slots__}, "from_attempt": 3})
