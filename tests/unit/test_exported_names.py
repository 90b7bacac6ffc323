"""Every ``__all__`` tells the truth: each name it exports exists in its module, none is private (dunders
such as ``__version__`` are public), none is listed twice — so ``from module import *`` and the
documentation generated from it never lie."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SOURCE_ROOT = Path(__file__).resolve().parents[2] / "codeflux"
GENERATED = SOURCE_ROOT / "api"


def _modules_with_all() -> list[str]:
    found = []
    for path in sorted(SOURCE_ROOT.rglob("*.py")):
        if GENERATED in path.parents or path.name == "__main__.py":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        if any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
               for node in tree.body):
            relative = path.relative_to(SOURCE_ROOT.parent).with_suffix("")
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            found.append(".".join(parts))
    return found


MODULES = _modules_with_all()


def test_the_scan_finds_the_modules_that_export_names() -> None:
    assert len(MODULES) > 100 and "codeflux.domain.errors" in MODULES  # the probe below is not vacuous


@pytest.mark.parametrize("name", MODULES)
def test_every_exported_name_exists_is_public_and_is_listed_once(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), f"{name}: a name is listed twice"
    assert [entry for entry in exported if not hasattr(module, entry)] == [], f"{name}: exports a missing name"
    private = [entry for entry in exported
               if entry.startswith("_") and not (entry.startswith("__") and entry.endswith("__"))]
    assert private == [], f"{name}: exports a private name"
