"""The selection rule: covering tests of each changed source file with an applicable map ∪ every test of a changed
test file — all or nothing."""

from __future__ import annotations

from codeflux.domain.covering_tests import ChangedFile, FileTestMap, is_pytest_file, select_covering_tests

CALC = FileTestMap(entry_id="mem_1", file="pkg/calc.py", tests=("tests/test_calc.py::test_add",
                                                                 "tests/test_sub.py::test_sub"))
OTHER = FileTestMap(entry_id="mem_2", file="pkg/other.py", tests=("tests/test_other.py::test_shout",))


def test_the_mapped_tests_of_every_changed_source_file_and_every_changed_test_file_are_selected() -> None:
    chosen = select_covering_tests([ChangedFile(path="pkg/calc.py"), ChangedFile(path="pkg/other.py"),
                                    ChangedFile(path="tests/test_new.py"), ChangedFile(path="README.md")],
                                   [CALC, OTHER])

    assert chosen.selective and chosen.entry_ids == ("mem_1", "mem_2")
    assert chosen.tests == ("tests/test_calc.py::test_add", "tests/test_other.py::test_shout",
                            "tests/test_sub.py::test_sub")
    assert chosen.test_files == ("tests/test_new.py",)
    assert chosen.pytest_selection == ("tests/test_new.py", *chosen.tests)


def test_a_changed_test_file_runs_whole_instead_of_its_mapped_tests_and_a_deleted_one_not_at_all() -> None:
    chosen = select_covering_tests([ChangedFile(path="pkg/calc.py"), ChangedFile(path="tests/test_calc.py"),
                                    ChangedFile(path="tests/test_sub.py", deleted=True)], [CALC])

    assert chosen.tests == () and chosen.test_files == ("tests/test_calc.py",)


def test_any_python_file_without_an_applicable_map_runs_the_whole_command_naming_it() -> None:
    chosen = select_covering_tests([ChangedFile(path="pkg/calc.py"), ChangedFile(path="pkg/new.py"),
                                    ChangedFile(path="tests/conftest.py")], [CALC], refused=["mem_9 (pkg/new.py): x"])

    assert not chosen.selective and chosen.pytest_selection == ()
    assert chosen.whole_suite == "no applicable file-test map for pkg/new.py, tests/conftest.py"
    assert chosen.without_map == ("pkg/new.py", "tests/conftest.py") and chosen.refused == ("mem_9 (pkg/new.py): x",)
    assert chosen.describe().startswith("whole suite: no applicable file-test map for pkg/new.py")


def test_a_change_to_the_test_settings_or_the_dependencies_runs_the_whole_command() -> None:
    for path in ("pyproject.toml", "setup.cfg", "requirements-dev.txt", "requirements/base.txt", "uv.lock"):
        chosen = select_covering_tests([ChangedFile(path="pkg/calc.py"), ChangedFile(path=path)], [CALC])
        assert chosen.whole_suite is not None and path in chosen.whole_suite
    assert select_covering_tests([ChangedFile(path="docs/pyproject.toml"), ChangedFile(path="pkg/calc.py")],
                                 [CALC]).selective  # positive control: not the repository's own settings


def test_nothing_to_select_runs_the_whole_command() -> None:
    assert select_covering_tests([ChangedFile(path="README.md")], []).whole_suite is not None
    assert select_covering_tests([ChangedFile(path="pkg/gone.py", deleted=True)], []).whole_suite is not None


def test_pytest_files_are_named_as_pytest_collects_them() -> None:
    assert is_pytest_file("tests/test_calc.py") and is_pytest_file("pkg/calc_test.py")
    assert not is_pytest_file("tests/conftest.py") and not is_pytest_file("tests/helpers.py")
    assert not is_pytest_file("tests/test_data.json")
