"""Stage 28's mocking report (issue 18): which tests that cover a changed atom replace it with a mock — every form
the module names, where it looks (test, decorators, class set-up, requested fixtures in the module or a conftest),
and what it cannot see."""

from __future__ import annotations

from pathlib import Path

from codeflux.domain.atoms import Atom, AtomChange
from codeflux.pipeline.mocking import mocking_report

TESTS = '''\
from unittest import mock
from unittest.mock import patch

import pytest

from pkg import calc


@pytest.fixture
def quiet(monkeypatch):
    monkeypatch.setattr(calc, "add", lambda a, b: 0)


def test_real():
    assert calc.add(1, 2) == 3


def test_patched_by_string():
    with mock.patch("pkg.calc.add", return_value=5):
        assert calc.total([1]) == 5


@patch("pkg.other.add")
def test_decorated_elsewhere(fake):
    assert calc.add(1, 1) == 2


def test_with_fixture(quiet):
    assert calc.add(2, 2) == 4


def test_with_conftest_fixture(loud):
    assert calc.add(2, 2) == 4


def test_dotted_monkeypatch(monkeypatch):
    monkeypatch.setattr("pkg.calc.add", lambda a, b: 1)
    monkeypatch.delattr(calc, "scale")
    assert calc.add(0, 0) == 1


def test_named_in_a_string_only():
    assert "add" in calc.add.__name__


@pytest.mark.parametrize("n", [1, 2])
def test_param(n, mocker):
    mocker.patch.object(calc, "add", return_value=n)


class TestBox:
    def setup_method(self):
        self.patcher = patch.object(calc.Box, "get")

    def test_get(self):
        assert calc.add(1, 2) == 3
'''
CONFTEST = '''\
import pytest

from pkg import calc


@pytest.fixture
def loud(monkeypatch):
    monkeypatch.setattr(calc, "add", print)
'''


def _atom(local: str) -> Atom:
    return Atom(path="pkg/calc.py", qualified_name=f"pkg.calc.{local}", local_name=local, change=AtomChange.CHANGED,
                first_line=1, last_line=2, signature=f"def {local.rpartition('.')[2]}(a, b)", changed=(2,),
                is_method="." in local, is_async=False)


def test_each_form_is_found_in_the_test_its_decorators_set_up_and_requested_fixtures(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    module = "tests/test_calc.py"
    names = ["test_real", "test_patched_by_string", "test_decorated_elsewhere", "test_with_fixture",
             "test_with_conftest_fixture", "test_dotted_monkeypatch", "test_named_in_a_string_only",
             "test_param[1]", "TestBox::test_get", "test_missing"]
    covering = [f"{module}::{name}" for name in names]
    add, get, scale, untested = _atom("add"), _atom("Box.get"), _atom("scale"), _atom("mul")

    report = mocking_report(tmp_path, [add, get, scale, untested], {
        add.qualified_name: covering, get.qualified_name: [f"{module}::TestBox::test_get"],
        scale.qualified_name: [f"{module}::test_dotted_monkeypatch"]})

    by_atom = {entry["atom"]: entry for entry in report}
    assert set(by_atom) == {"pkg.calc.add", "pkg.calc.Box.get", "pkg.calc.scale"}  # no covering test: not listed
    entry = by_atom["pkg.calc.add"]
    assert entry["tests"] == len(covering)
    assert entry["mocked_in"] == sorted(f"{module}::{name}" for name in (
        "test_patched_by_string", "test_decorated_elsewhere", "test_with_fixture", "test_with_conftest_fixture",
        "test_dotted_monkeypatch", "test_param[1]"))
    replacements = {(item["test"].partition("::")[2], item["form"], item["target"], item["match"], item["at"])
                    for item in entry["replacements"]}  # type: ignore[union-attr]
    assert ("test_patched_by_string", "mock.patch", "pkg.calc.add", "qualified name", f"{module}:19") in replacements
    assert ("test_decorated_elsewhere", "patch", "pkg.other.add", "by name", f"{module}:23") in replacements
    assert ("test_with_fixture", "monkeypatch.setattr", "calc.add", "qualified name", f"{module}:11") in replacements
    assert ("test_with_conftest_fixture", "monkeypatch.setattr", "calc.add", "qualified name",
            "conftest.py:8") in replacements
    assert ("test_dotted_monkeypatch", "monkeypatch.setattr", "pkg.calc.add", "qualified name",
            f"{module}:37") in replacements
    assert ("test_param[1]", "mocker.patch.object", "calc.add", "qualified name", f"{module}:48") in replacements
    assert by_atom["pkg.calc.Box.get"]["mocked_in"] == [f"{module}::TestBox::test_get"]
    assert by_atom["pkg.calc.scale"]["replacements"] == [{
        "test": f"{module}::test_dotted_monkeypatch", "at": f"{module}:38", "form": "monkeypatch.delattr",
        "target": "calc.scale", "match": "qualified name"}]


def test_a_test_file_that_does_not_parse_or_is_a_link_is_read_as_no_replacement(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_bad.py").write_text("def test_x(:\n")
    (tmp_path / "elsewhere.py").write_text(TESTS)
    (tmp_path / "tests" / "test_link.py").symlink_to(tmp_path / "elsewhere.py")
    add = _atom("add")
    report = mocking_report(tmp_path, [add], {add.qualified_name: [
        "tests/test_bad.py::test_x", "tests/test_link.py::test_patched_by_string", "tests/missing.py::test_y"]})
    assert report == [{"atom": "pkg.calc.add", "tests": 3, "mocked_in": [], "replacements": []}]
