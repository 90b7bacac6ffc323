from __future__ import annotations

import inspect

import pytest

from codeflux.cli.exit_codes import EXIT_CODE_FOR_ERROR, EXIT_CODE_MEANINGS, ExitCode
from codeflux.cli.main import main
from codeflux.domain import errors


def _all_error_classes() -> list[type[errors.CodefluxError]]:
    return [
        obj for _, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, errors.CodefluxError)
    ]


def test_every_error_class_has_an_explicit_exit_code() -> None:
    missing = [cls.__name__ for cls in _all_error_classes() if cls not in EXIT_CODE_FOR_ERROR]
    assert missing == []


def test_every_error_class_is_exported_and_drawn_in_the_tree() -> None:
    for cls in _all_error_classes():
        assert cls.__name__ in errors.__all__
        assert cls.__name__ in (errors.__doc__ or ""), cls.__name__


def test_error_families_map_to_the_documented_codes() -> None:
    assert EXIT_CODE_FOR_ERROR[errors.UsageError] is ExitCode.USAGE
    assert EXIT_CODE_FOR_ERROR[errors.PrerequisiteError] is ExitCode.PREREQUISITE
    assert EXIT_CODE_FOR_ERROR[errors.DecisionNeededError] is ExitCode.DECISION_NEEDED
    assert EXIT_CODE_FOR_ERROR[errors.StalledError] is ExitCode.STALLED
    for cls in _all_error_classes():
        for family, code in ((errors.UsageError, ExitCode.USAGE), (errors.PrerequisiteError, ExitCode.PREREQUISITE)):
            if issubclass(cls, family):
                assert EXIT_CODE_FOR_ERROR[cls] is code, cls.__name__


def test_help_prints_the_whole_exit_code_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for code, meaning in EXIT_CODE_MEANINGS.items():
        assert f"{code.value}  {meaning}" in out
