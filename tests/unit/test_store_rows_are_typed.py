"""Store rows reach callers as domain types: no row type exported by ``codeflux.store`` carries stored JSON
text or a bare string where a closed vocabulary (state, outcome, kind, source …) belongs, and no code above
the store parses a stored JSON column itself.

The JSON columns are read from the migrations, so a new ``*_json`` column is covered without touching this
test. Decoding happens once, in the store module's row decoder; what reaches the caller is already typed.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
import re
import typing
from pathlib import Path

import codeflux.store

REPO = Path(__file__).resolve().parents[2]
SOURCE_ROOT = REPO / "codeflux"
STORE = SOURCE_ROOT / "store"
GENERATED = SOURCE_ROOT / "api"

# Field names that hold a value of a closed vocabulary; as a bare ``str`` they would make callers compare text.
VOCABULARY_FIELDS = frozenset({
    "actor", "confinement", "created_by", "decided_by", "decision", "error_kind", "failure_kind", "interrupted_in",
    "kind", "outcome", "recommended", "role", "scope", "source", "state", "status", "tool", "trigger",
})  # fmt: skip
# (row type, field) pairs that stay text on purpose, each with its reason.
TEXT_ON_PURPOSE = {
    ("JournalEvent", "kind"): "an event of a kind this codeflux does not know must stay readable; its typed "
                              "payload is JournalEvent.event",
    ("StoredEventColumns", "payloads_json"): "batched replay forwards the stored payload texts unchanged (the "
                                             "registry re-encodes every stored shape identically: "
                                             "test_captured_journal.py)",
}


def _stored_json_columns() -> frozenset[str]:
    text = "\n".join(path.read_text() for path in sorted((REPO / "migrations").glob("*.sql")))
    return frozenset(re.findall(r"\b([a-z][a-z0-9_]*_json)\b", text))


def _row_types() -> list[type]:
    found = []
    for info in pkgutil.iter_modules(codeflux.store.__path__):
        module = importlib.import_module(f"codeflux.store.{info.name}")
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type) and dataclasses.is_dataclass(value):
                found.append(value)
    return found


def test_the_scans_see_the_rows_and_the_json_columns() -> None:
    names = {row.__name__ for row in _row_types()}
    assert {"ToolRequestRow", "DecisionRow", "ExecutionRow", "PlanRevisionRow", "LedgerEntryRow"} <= names
    assert {"operation_json", "needs_json", "covered_needs_json", "plan_json"} <= _stored_json_columns()


def test_no_store_row_carries_json_text_or_a_bare_vocabulary_string() -> None:
    offending = []
    for row in _row_types():
        hints = typing.get_type_hints(row)
        for field in dataclasses.fields(row):
            bare = field.name in VOCABULARY_FIELDS and hints[field.name] in (str, str | None)
            if (field.name.endswith("_json") or bare) and (row.__name__, field.name) not in TEXT_ON_PURPOSE:
                offending.append(f"{row.__module__}.{row.__name__}.{field.name}: {hints[field.name]}")
    assert offending == [], "decode these in the store's row decoder:\n" + "\n".join(offending)


def _json_loads_of_stored_columns(tree: ast.AST, columns: frozenset[str]) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "loads"):
            continue
        for argument in node.args:
            names = {sub.attr for sub in ast.walk(argument) if isinstance(sub, ast.Attribute)}
            names |= {sub.id for sub in ast.walk(argument) if isinstance(sub, ast.Name)}
            if names & columns:
                found.append((node.lineno, ast.unparse(argument)))
    return found


def test_nothing_above_the_store_parses_a_stored_json_column() -> None:
    columns = _stored_json_columns()
    offending = [
        f"{path.relative_to(REPO)}:{line} json.loads({argument})"
        for path in sorted(SOURCE_ROOT.rglob("*.py"))
        if STORE not in path.parents and GENERATED not in path.parents
        for line, argument in _json_loads_of_stored_columns(ast.parse(path.read_text()), columns)
    ]
    assert offending == [], "stored JSON is decoded once, in the store:\n" + "\n".join(offending)


def test_the_json_scan_finds_a_parse_of_a_stored_column() -> None:
    columns = frozenset({"needs_json"})
    assert _json_loads_of_stored_columns(ast.parse("json.loads(request.needs_json)"), columns) == [
        (1, "request.needs_json")]
    assert _json_loads_of_stored_columns(ast.parse("json.loads(line)"), columns) == []
