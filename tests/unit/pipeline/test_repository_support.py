"""Which repositories get codeflux's Python checks, and which are labelled "experimental: generic checks only"
(issue 14 item 11, ARCHITECTURE §8.4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.pipeline.delivery import EXPERIMENTAL_LABEL, is_python_repository


@pytest.mark.parametrize("layout", [
    {"pyproject.toml": "[project]\nname = 'x'\n"},
    {"setup.py": ""},
    {"src/pkg/deep/module.py": "x = 1\n"},
])  # fmt: skip
def test_a_repository_with_python_gets_the_python_checks(tmp_path: Path, layout: dict[str, str]) -> None:
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert is_python_repository(tmp_path)


def test_a_repository_without_python_is_experimental(tmp_path: Path) -> None:
    (tmp_path / "main.go").write_text("package main\n")
    (tmp_path / ".tools").mkdir()
    (tmp_path / ".tools" / "helper.py").write_text("")  # hidden folders do not make a Python project
    elsewhere = tmp_path.parent / f"{tmp_path.name}-other"
    elsewhere.mkdir()
    (elsewhere / "x.py").write_text("")
    (tmp_path / "linked").symlink_to(elsewhere)  # links are not followed
    assert not is_python_repository(tmp_path)
    assert EXPERIMENTAL_LABEL == "experimental: generic checks only (not a Python repository)"
