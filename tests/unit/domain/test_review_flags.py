"""The review's "changes what runs" rule: which changed paths decide what later commands execute, and why."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.review_flags import WhatRunsChange, changes_what_runs, what_runs_lines, what_runs_reason

FLAGGED_NAMES = [
    "conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "Makefile", "makefile",
    "GNUmakefile", "rules.mk", ".gitattributes", ".gitmodules", ".pre-commit-config.yaml", "setup.py",
    "sitecustomize.py", "usercustomize.py", "evil.pth", "noxfile.py", ".envrc", "package.json", ".coveragerc",
]
PLAIN_NAMES = [
    "calc.py", "test_calc.py", "conftest.py.orig", "conftest_helpers.py", "Makefile.md", "README.md", "setup.py.txt",
    "pyproject.toml.bak", "mk", "path.txt", "package-lock.json", "pytest.ini~", "notes.pth.md",
]
segment = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x2FFF, exclude_characters="/"),
                  min_size=1, max_size=12)
directories = st.lists(segment, max_size=4).map(lambda parts: "".join(f"{p}/" for p in parts))


@pytest.mark.parametrize("name", FLAGGED_NAMES)
def test_each_file_that_decides_what_runs_is_flagged_with_a_reason_in_any_directory(name: str) -> None:
    for path in (name, f"tests/{name}", f"a/b/c/{name}"):
        reason = what_runs_reason(path)
        assert reason is not None and reason.strip() and "\n" not in reason, path


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_other_files_are_not_flagged(name: str) -> None:
    assert what_runs_reason(name) is None
    assert what_runs_reason(f"src/{name}") is None


def test_the_reasons_say_what_runs_the_file() -> None:
    assert "pytest" in (what_runs_reason("tests/conftest.py") or "")
    assert "[tool.pytest" in (what_runs_reason("pyproject.toml") or "")
    assert "[build-system]" in (what_runs_reason("pyproject.toml") or "")
    assert "make" in (what_runs_reason("Makefile") or "")
    assert "filter" in (what_runs_reason(".gitattributes") or "")
    assert "interpreter start" in (what_runs_reason("lib/site-packages/x.pth") or "")
    assert "scripts" in (what_runs_reason("web/package.json") or "")


def test_matching_ignores_case_as_a_case_insensitive_file_system_would() -> None:
    assert what_runs_reason("Tests/CONFTEST.PY") == what_runs_reason("tests/conftest.py")
    assert what_runs_reason("x/Evil.PTH") is not None


def test_changes_are_listed_once_each_in_diff_order() -> None:
    paths = ["pkg/calc.py", "tests/conftest.py", "Makefile", "tests/conftest.py", "docs/index.md", "site/x.pth"]

    flagged = changes_what_runs(paths)

    assert [f.path for f in flagged] == ["tests/conftest.py", "Makefile", "site/x.pth"]
    assert all(f.reason == what_runs_reason(f.path) for f in flagged)
    assert changes_what_runs(["pkg/calc.py", "README.md"]) == ()


@given(directories, st.sampled_from(FLAGGED_NAMES + PLAIN_NAMES))
def test_only_the_file_name_decides(directory: str, name: str) -> None:
    assert what_runs_reason(directory + name) == what_runs_reason(name)


@given(st.lists(st.one_of(directories.map(lambda d: d + "conftest.py"), directories.map(lambda d: d + "x.py"),
                          segment)))
def test_the_flags_are_exactly_the_flagged_paths_in_order_without_repeats(paths: list[str]) -> None:
    flagged = changes_what_runs(paths)

    expected = list(dict.fromkeys(p for p in paths if what_runs_reason(p) is not None))
    assert [f.path for f in flagged] == expected


def test_the_terminal_lines_name_each_path_escaped_and_nothing_when_none() -> None:
    lines = what_runs_lines([WhatRunsChange(path="tests/conftest.py", reason="pytest runs it"),
                             WhatRunsChange(path="a\u202eb.pth", reason="python runs it")])

    assert lines[0].startswith("changes what runs: 2 file(s)")
    assert lines[1] == "  changes what runs  tests/conftest.py: pytest runs it"
    assert lines[2] == "  changes what runs  a\\u202eb.pth: python runs it"
    assert what_runs_lines([]) == ()
