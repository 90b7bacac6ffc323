"""Which tests a task's coverage run needs, from file-test maps memory holds (the selection rule). Pure: no I/O.

A file-test map says "at revision R of the person's checkout, these tests executed file F". Judged at the task's
base revision (same repository, toolchain and dependency set, F and each of its test files unchanged between R
and the base) it *proposes* tests; it proves nothing. The selection (:func:`select_covering_tests`) is

    the covering tests of each changed non-test Python file that has an applicable map
    ∪ every test in each test file the task added or changed

and it is all or nothing: when **any** changed Python file (a ``conftest.py`` or a helper under ``tests/``
included — they shape tests no map names) has no applicable map, or the task changes how the tests are configured
or what they depend on (:data:`TEST_SETTINGS_FILES`, requirements and lock files), the whole test command runs and
:attr:`CoveringTests.whole_suite` says why. A selection can only make the measured coverage smaller, so the gates it
feeds get stricter, never laxer; a gate that fails under it is measured again on the whole test command before it
fails (:mod:`codeflux.pipeline.atom_coverage`). The test stage itself (the whole suite must pass) never selects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

__all__ = [
    "TEST_SETTINGS_FILES",
    "ChangedFile",
    "CoveringTests",
    "FileTestMap",
    "is_pytest_file",
    "select_covering_tests",
    "shapes_the_tests",
]

TEST_SETTINGS_FILES: Final = frozenset({"pyproject.toml", "setup.cfg", "pytest.ini", "tox.ini", "uv.lock",
                                        "poetry.lock", "Pipfile", "Pipfile.lock", "pdm.lock"})
"""Top-level files that decide how the tests are collected and run, or with which dependencies."""

_MAX_SHOWN: Final = 5


def is_pytest_file(path: str) -> bool:
    """A test module by pytest's default names (``test_*.py``, ``*_test.py``); ``conftest.py`` is not one."""
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def shapes_the_tests(path: str) -> bool:
    """A changed file that can change which tests run or how, whatever memory says of the Python files."""
    folder, _, name = path.rpartition("/")
    if not folder:
        return name in TEST_SETTINGS_FILES or (name.startswith("requirements") and name.endswith(".txt"))
    return folder == "requirements" and name.endswith(".txt")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangedFile:
    """A path the task's diff adds, changes or removes (``deleted``)."""

    path: str
    deleted: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FileTestMap:
    """An applicable file-test map: the memory entry, the file and the tests (pytest node ids) that executed it."""

    entry_id: str
    file: str
    tests: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CoveringTests:
    """What to run under coverage: the node ids the maps propose (``tests``) and the test files to run whole
    (``test_files``), from the entries ``entry_ids`` — or the whole test command (``whole_suite`` says why).
    ``without_map`` names the changed Python files no applicable map covers; ``refused`` says, per candidate entry
    that was not applicable, why (``"mem_… (file): reason"``)."""

    tests: tuple[str, ...] = ()
    test_files: tuple[str, ...] = ()
    entry_ids: tuple[str, ...] = ()
    without_map: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    whole_suite: str | None = None

    @property
    def selective(self) -> bool:
        return self.whole_suite is None

    @property
    def pytest_selection(self) -> tuple[str, ...]:
        """The node ids and test files a selected run keeps (empty for the whole test command)."""
        return () if self.whole_suite is not None else (*self.test_files, *self.tests)

    def describe(self) -> str:
        if self.whole_suite is not None:
            return f"whole suite: {self.whole_suite}"
        entries = ", ".join(self.entry_ids) or "none"
        files = f" and every test of {', '.join(self.test_files)}" if self.test_files else ""
        return f"selected from memory entries [{entries}] ({len(self.tests)} mapped test(s){files})"

    @classmethod
    def whole(cls, reason: str, *, without_map: Sequence[str] = (), refused: Sequence[str] = ()) -> CoveringTests:
        return cls(whole_suite=reason, without_map=tuple(without_map), refused=tuple(refused))


def _shown(paths: Sequence[str]) -> str:
    more = f" and {len(paths) - _MAX_SHOWN} more" if len(paths) > _MAX_SHOWN else ""
    return ", ".join(paths[:_MAX_SHOWN]) + more


def select_covering_tests(changed: Sequence[ChangedFile], maps: Sequence[FileTestMap], *,
                          refused: Sequence[str] = ()) -> CoveringTests:
    """The selection for ``changed`` from the applicable ``maps`` (see the module docstring); ``refused`` is
    carried into the result for the evidence."""
    settings = sorted(c.path for c in changed if shapes_the_tests(c.path))
    if settings:
        return CoveringTests.whole(f"the task changes {_shown(settings)}, which decide(s) how the tests run or "
                                   "what they depend on", refused=refused)
    python = [c for c in changed if c.path.endswith(".py")]
    gone = {c.path for c in python if c.deleted and is_pytest_file(c.path)}
    test_files = sorted(c.path for c in python if not c.deleted and is_pytest_file(c.path))
    sources = sorted(c.path for c in python if not c.deleted and not is_pytest_file(c.path))
    by_file: dict[str, list[FileTestMap]] = {}
    for found in maps:
        by_file.setdefault(found.file, []).append(found)
    without = [path for path in sources if path not in by_file]
    if without:
        return CoveringTests.whole(f"no applicable file-test map for {_shown(without)}", without_map=without,
                                   refused=refused)
    used = [found for path in sources for found in by_file[path]]
    tests = sorted({test for found in used for test in found.tests
                    if test.split("::", 1)[0] not in gone and test.split("::", 1)[0] not in test_files})
    if not tests and not test_files:
        return CoveringTests.whole("the diff changes no Python file a map or a test file selects tests for",
                                   refused=refused)
    return CoveringTests(tests=tuple(tests), test_files=tuple(test_files),
                         entry_ids=tuple(sorted({found.entry_id for found in used})), refused=tuple(refused))
