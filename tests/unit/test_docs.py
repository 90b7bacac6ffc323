"""The user documents mention every command, error class and exit code (they drift otherwise)."""

from __future__ import annotations

import inspect
from pathlib import Path

from codeflux.cli.exit_codes import EXIT_CODE_MEANINGS
from codeflux.cli.main import COMMAND_MODULES
from codeflux.domain import errors

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_using_md_names_every_command() -> None:
    text = (DOCS / "using.md").read_text()
    for module in COMMAND_MODULES:
        assert f"codeflux {module.replace('_', '-')}" in text, module


def test_using_md_names_every_error_class() -> None:
    text = (DOCS / "using.md").read_text()
    for name, obj in inspect.getmembers(errors, inspect.isclass):
        if issubclass(obj, errors.CodefluxError):
            assert name in text, name


def test_using_md_draws_the_same_error_tree_as_the_errors_module() -> None:
    doc_lines = (errors.__doc__ or "").splitlines()
    start = next(i for i, line in enumerate(doc_lines) if line.strip() == "CodefluxError")
    tree = []
    for line in doc_lines[start:]:
        if not line.strip():
            break
        tree.append(line.removeprefix("    "))
    assert "\n".join(tree) in (DOCS / "using.md").read_text()


def test_using_md_lists_every_exit_code() -> None:
    text = (DOCS / "using.md").read_text()
    for code in EXIT_CODE_MEANINGS:
        assert f"| {code.value} |" in text
