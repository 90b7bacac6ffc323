"""Every module under codeflux/ imports only what its package may lean on (STYLE.md §1).

The table below is the rule, first-party *and* third-party. A module's row is the most specific one that
contains it: each folder under ``codeflux/`` has a row, and so do the coordinator's wings
(``coordinator.tasks``, ``coordinator.runs``, ``coordinator.spending``), whose modules are then no longer in the
``coordinator`` row — that row holds the coordinator's top-level modules (hooks, journal, maintenance, doctor,
…). The modules directly in ``codeflux/`` (``logs.py``, the root ``__init__.py``) share the top-level row.
Every row may import itself and the standard library (``sys.stdlib_module_names``). Importing the root
package ``codeflux`` itself (``import codeflux`` for ``__version__``) is allowed everywhere: it runs whenever
any codeflux module is imported anyway. Imports under ``TYPE_CHECKING`` count, and so does
``importlib.import_module("constant")``.

Besides whole rows, a row may name single modules it may import (``store.database``): the adapters
(``services``, ``cli``) take from the store only the ``Database`` type, the data location and ``open_store``;
everything else of the store reaches them through coordinator functions (``coordinator.maintenance``,
``coordinator.journal``, …). The coordinator's rows form floors without a circle: its top-level modules lean on
no wing, ``spending`` on none, ``tasks`` on ``spending``, ``runs`` on both.

A new folder under ``codeflux/`` or ``codeflux/coordinator/`` fails here until it has a row.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE_ROOT = Path(__file__).resolve().parents[2] / "codeflux"

TOP_LEVEL = "<top-level modules>"
ROOT = "<the codeflux package>"
MAIN = "__main__"

PACKAGES = frozenset(
    {
        "domain", "store", "authority", "credentials", "redact", "gitwork", "worker", "providers",
        "pipeline", "memory", "coordinator", "services", "server", "cli", "api",
    }
)  # fmt: skip
COORDINATOR_WINGS = frozenset({"coordinator.tasks", "coordinator.runs", "coordinator.spending"})
COORDINATOR_ROWS = COORDINATOR_WINGS | {"coordinator"}  # "coordinator": its top-level modules
EVERY_UNIT = PACKAGES | COORDINATOR_WINGS | {TOP_LEVEL}

STORE_FOR_ADAPTERS = frozenset({"store.database", "store.location", "store.opening"})
"""The store modules ``services`` and ``cli`` may import: the ``Database`` type, where the data lives
(``DataLocation`` and its resolve/ensure functions) and ``open_store`` (how a command opens its database)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Leans:
    """What one row may import besides itself and the standard library."""

    first_party: frozenset[str]  # whole rows
    third_party: frozenset[str] | None  # None: any installed package
    modules: frozenset[str] = frozenset()  # single first-party modules (and what is below them) of other rows

    def describe(self) -> str:
        first = sorted(_row_name(p) for p in self.first_party)
        single = sorted(f"codeflux.{m}" for m in self.modules)
        third = ["any third-party package"] if self.third_party is None else sorted(self.third_party)
        return ", ".join([*first, *single, *third, "the standard library"])


def leans(*first_party: str, third_party: frozenset[str] | None = frozenset(),
          modules: frozenset[str] = frozenset()) -> Leans:
    return Leans(first_party=frozenset(first_party), third_party=third_party, modules=modules)


IMPORT_TABLE: dict[str, Leans] = {
    "domain": leans(),
    "store": leans("domain", third_party=frozenset({"apsw", "platformdirs"})),
    "authority": leans("domain", "store", "redact"),  # a tool request's one-line summary is redacted
    "credentials": leans("domain", "redact", third_party=frozenset({"keyring", "secretstorage", "jeepney"})),
    "redact": leans("domain", third_party=frozenset({"regex"})),  # partial matching for streamed output
    "gitwork": leans("domain", third_party=frozenset({"pygit2"})),
    "worker": leans("domain", "api", "redact", third_party=frozenset({"grpc", "google.protobuf"})),
    "providers": leans("domain", "credentials", "redact", third_party=frozenset({"httpx", "pydantic"})),
    "pipeline": leans("domain", "store", "gitwork", third_party=frozenset({"ruff", "radon", "libcst"})),
    "memory": leans("domain", "store", "gitwork"),
    # The coordinator's floors, lowest first; each leans only on the ones below it.
    # Its top-level modules (hooks and their tool-call values, journal, maintenance, doctor, instance, demo).
    "coordinator": leans("domain", "store", "authority", "credentials", "worker", "memory", TOP_LEVEL,
                         third_party=frozenset({"apsw"})),
    # Money: the model gateway, budgets and their ledger, prices, model approvals.
    "coordinator.spending": leans("domain", "store", "providers", "redact"),
    # One task's life; startup recovery reconciles interrupted model requests through the gateway's function.
    "coordinator.tasks": leans("domain", "store", "authority", "gitwork", "pipeline", "memory", "coordinator",
                               "coordinator.spending", third_party=frozenset({"pydantic"})),
    # One run of a task: drives the task service, spends through the gateway, talks to the worker.
    "coordinator.runs": leans("domain", "store", "authority", "gitwork", "pipeline", "memory", "providers", "redact",
                              "worker", TOP_LEVEL, "coordinator", "coordinator.tasks", "coordinator.spending"),
    # The RPC handlers: validate, call the coordinator, convert its records into protobuf views.
    "services": leans("domain", "api", "authority", "credentials", "gitwork", "worker", *COORDINATOR_ROWS,
                      third_party=frozenset({"google.protobuf"}), modules=STORE_FOR_ADAPTERS),
    # The transports over the method table; the store is reached only through services and the coordinator.
    "server": leans("domain", "api", "redact", "services", *COORDINATOR_ROWS,
                    third_party=frozenset({"grpc", "google.protobuf", "websockets"})),
    # `codeflux start` runs the server; the server never reaches back into the CLI.
    "cli": leans(*(EVERY_UNIT - {"store"}), third_party=None, modules=STORE_FOR_ADAPTERS),
    "api": leans(third_party=frozenset({"grpc", "google.protobuf"})),
    TOP_LEVEL: leans("domain", "redact", third_party=frozenset({"structlog"})),
    # `python -m codeflux` may only hand over to the CLI.
    MAIN: leans("cli"),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Layout:
    """Which names directly under codeflux/ are packages (folders) and which are modules (files)."""

    packages: frozenset[str]
    modules: frozenset[str]

    def unit_of_import(self, dotted: str) -> str | None:
        """The table row an absolute import of `dotted` lands in; None when it is not first-party."""
        parts = dotted.split(".")
        if parts[0] != "codeflux":
            return None
        if len(parts) == 1:
            return ROOT
        if parts[1] in self.packages:
            return row_containing(".".join(parts[1:])) or parts[1]
        if parts[1] == MAIN:
            return MAIN
        if parts[1] in self.modules:
            return TOP_LEVEL
        return ROOT  # an attribute of the root package, such as __version__


def row_containing(dotted: str) -> str | None:
    """The most specific row a module (dotted below ``codeflux``, e.g. ``coordinator.tasks.service``) is in."""
    rows = [row for row in IMPORT_TABLE if row not in {TOP_LEVEL, MAIN} and within(dotted, row)]
    return max(rows, key=len, default=None)


def unit_of_module(relative: Path) -> str:
    if len(relative.parts) > 1:
        return row_containing(".".join(relative.with_suffix("").parts)) or relative.parts[0]
    return MAIN if relative.stem == MAIN else TOP_LEVEL


def read_layout(root: Path) -> Layout:
    return Layout(
        packages=frozenset(p.name for p in root.iterdir() if p.is_dir() and p.name != "__pycache__"),
        modules=frozenset(p.stem for p in root.glob("*.py")),
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Violation:
    where: str
    line: int
    imported: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}:{self.line} imports {self.imported}: {self.why}"


def module_package_parts(relative: Path) -> list[str]:
    """The dotted package a module lives in, as parts: codeflux/store/x.py → [codeflux, store]."""
    return ["codeflux", *relative.parts[:-1]]  # a package's __init__.py lives in that package too


def imported_names(tree: ast.AST, *, relative: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute dotted name) for every import; `from m import a` yields m.a, so a submodule or a
    dotted third-party prefix such as google.protobuf is seen whichever way it was spelled."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module_package_parts(relative)
                if node.level - 1 >= len(package):
                    yield node.lineno, "." * node.level + base
                    continue
                kept = package[: len(package) - (node.level - 1)]
                base = ".".join([*kept, *([base] if base else [])])
            for alias in node.names:
                yield node.lineno, base if alias.name == "*" else f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and _is_import_module_call(node):
            argument = node.args[0]
            name = argument.value if isinstance(argument, ast.Constant) else None
            if isinstance(name, str) and not name.startswith("."):
                yield node.lineno, name


def _is_import_module_call(node: ast.Call) -> bool:
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    return name in {"import_module", "__import__"} and bool(node.args)


def within(dotted: str, prefix: str) -> bool:
    return dotted == prefix or dotted.startswith(prefix + ".")


def find_violations(source: str, *, relative: Path, layout: Layout) -> list[Violation]:
    """Every import in one module's source that its package's row does not allow."""
    where = f"codeflux/{relative.as_posix()}"
    unit = unit_of_module(relative)
    rule = IMPORT_TABLE.get(unit)
    if rule is None:
        unlisted = f"package {unit!r} has no row in the import table"
        return [Violation(where=where, line=1, imported="-", why=unlisted)]
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as error:
        unparsable = f"does not parse: {error.msg}"
        return [Violation(where=where, line=error.lineno or 1, imported="-", why=unparsable)]
    violations = []
    for line, dotted in imported_names(tree, relative=relative):
        why = _why_not_allowed(dotted, unit=unit, rule=rule, layout=layout)
        if why is not None:
            violations.append(Violation(where=where, line=line, imported=dotted, why=why))
    return violations


def _why_not_allowed(dotted: str, *, unit: str, rule: Leans, layout: Layout) -> str | None:
    if dotted.startswith("."):
        return "a relative import that climbs above the codeflux package"
    target = layout.unit_of_import(dotted)
    allowed_here = f"{_row_name(unit)} may lean on: {rule.describe()}"
    if target is not None:
        if target in {ROOT, unit} or target in rule.first_party:
            return None
        if any(within(dotted, f"codeflux.{module}") for module in rule.modules):
            return None
        only = sorted(f"codeflux.{m}" for m in rule.modules if within(f"codeflux.{m}", f"codeflux.{target}"))
        if only:
            return (f"{_row_name(unit)} may import from {_row_name(target)} only {', '.join(only)}; "
                    "reach the rest through a coordinator function")
        return allowed_here
    if dotted.partition(".")[0] in sys.stdlib_module_names:
        return None
    if rule.third_party is None or any(within(dotted, allowed) for allowed in rule.third_party):
        return None
    return allowed_here


def _row_name(unit: str) -> str:
    if unit == "coordinator":
        return "codeflux.coordinator (its top-level modules)"
    return f"codeflux.{unit}" if unit in PACKAGES | COORDINATOR_WINGS else unit


def codeflux_modules() -> list[Path]:
    return sorted(p for p in SOURCE_ROOT.rglob("*.py") if "__pycache__" not in p.parts)


# ------------------------------------------------------------------------------------------- the rule


def test_every_codeflux_module_imports_only_what_its_package_may_lean_on() -> None:
    layout = read_layout(SOURCE_ROOT)
    modules = codeflux_modules()
    assert SOURCE_ROOT / "domain" / "__init__.py" in modules, "the scan found no codeflux sources"
    violations = [
        violation
        for path in modules
        for violation in find_violations(path.read_text(),
                                         relative=path.relative_to(SOURCE_ROOT), layout=layout)
    ]
    assert not violations, "import boundary violations:\n" + "\n".join(map(str, violations))


def test_every_folder_under_codeflux_has_a_row_in_the_import_table() -> None:
    unlisted = sorted(read_layout(SOURCE_ROOT).packages - IMPORT_TABLE.keys())
    assert not unlisted, f"add a row to IMPORT_TABLE (and STYLE.md §1) for: {unlisted}"


def test_every_package_init_has_a_docstring_saying_what_it_owns() -> None:
    inits = sorted(SOURCE_ROOT.rglob("__init__.py"))
    assert inits
    lacking = []
    for init in inits:
        docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
        if len(docstring.split()) < 4:
            lacking.append(str(init.relative_to(SOURCE_ROOT.parent)))
    assert not lacking, f"these __init__.py files need a docstring saying what the package owns: {lacking}"


def test_every_folder_of_python_modules_under_codeflux_is_a_package_with_an_init() -> None:
    folders = {p.parent for p in codeflux_modules()}
    bare = [folder for folder in folders if not (folder / "__init__.py").exists()]
    missing = sorted(str(folder.relative_to(SOURCE_ROOT.parent)) for folder in bare)
    assert not missing, f"namespace packages escape the docstring rule; add __init__.py to: {missing}"


# -------------------------------------------------------------------------- the table keeps its promises


def test_the_domain_row_allows_only_the_standard_library() -> None:
    assert IMPORT_TABLE["domain"] == leans()


def test_only_the_cli_may_import_the_server_and_nothing_imports_the_cli() -> None:
    # The CLI is the outermost adapter (`codeflux start` runs the server); the server never reaches back.
    allowed = {"cli": {"server"}}
    leaning_on_adapters = {
        unit: sorted(rule.first_party & {"server", "cli"} - {unit} - allowed.get(unit, set()))
        for unit, rule in IMPORT_TABLE.items()
        if rule.first_party & {"server", "cli"} - {unit} - allowed.get(unit, set()) and unit != MAIN
    }
    assert leaning_on_adapters == {}
    assert IMPORT_TABLE[MAIN].first_party == {"cli"}


@pytest.mark.parametrize("adapter", ["services", "cli"])
def test_the_adapters_take_from_the_store_only_the_database_its_location_and_open_store(adapter: str) -> None:
    rule = IMPORT_TABLE[adapter]
    assert "store" not in rule.first_party
    assert rule.modules == STORE_FOR_ADAPTERS == {"store.database", "store.location", "store.opening"}


def test_every_folder_under_the_coordinator_is_a_wing_with_a_row() -> None:
    folders = {p.name for p in (SOURCE_ROOT / "coordinator").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert {f"coordinator.{name}" for name in folders} == COORDINATOR_WINGS


def test_the_coordinators_rows_lean_on_each_other_without_a_circle() -> None:
    below = {row: IMPORT_TABLE[row].first_party & COORDINATOR_ROWS for row in COORDINATOR_ROWS}
    floors: list[str] = []
    while len(floors) < len(below):
        ready = sorted(row for row, needs in below.items() if row not in floors and needs <= set(floors))
        assert ready, f"the coordinator's rows lean on each other in a circle: {below}"
        floors.extend(ready)
    assert floors == ["coordinator", "coordinator.spending", "coordinator.tasks", "coordinator.runs"]


def test_no_lower_floor_leans_on_the_coordinator_services_server_or_cli() -> None:
    upper = COORDINATOR_ROWS | {"services", "server", "cli"}
    lower = set(IMPORT_TABLE) - upper - {MAIN}
    leaning = {row: sorted(IMPORT_TABLE[row].first_party & upper) for row in lower
               if IMPORT_TABLE[row].first_party & upper}
    assert leaning == {}
    assert not IMPORT_TABLE["services"].first_party & {"server", "cli"}


def test_the_worker_never_reaches_credentials_store_providers_or_keyring() -> None:
    worker = IMPORT_TABLE["worker"]
    assert not worker.first_party & {"credentials", "store", "providers", "coordinator"}
    assert worker.third_party is not None
    assert not {t for t in worker.third_party if t.split(".")[0] in {"keyring", "secretstorage", "jeepney"}}


# -------------------------------------------------------------------------------- the checker itself

EXAMPLE_LAYOUT = Layout(packages=PACKAGES, modules=frozenset({"logs", "__init__"}))


def violations_in(source: str, module: str) -> list[str]:
    found = find_violations(source, relative=Path(module), layout=EXAMPLE_LAYOUT)
    return [v.imported for v in found]


def test_a_domain_module_importing_apsw_or_the_store_is_reported() -> None:
    source = "import json\nimport apsw\nfrom codeflux.store import events\n"
    assert violations_in(source, "domain/ids.py") == ["apsw", "codeflux.store.events"]


def test_an_import_hidden_under_type_checking_still_counts() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pygit2\n"
    assert violations_in(source, "store/x.py") == ["pygit2"]


def test_relative_imports_resolve_to_the_package_they_name() -> None:
    source = "from . import events\nfrom ..domain import errors\nfrom .. import cli\nfrom ...x import y\n"
    assert violations_in(source, "store/journal.py") == ["codeflux.cli", "...x"]


def test_a_relative_import_in_a_package_init_stays_in_that_package() -> None:
    assert violations_in("from .errors import CodefluxError\n", "domain/__init__.py") == []


def test_from_codeflux_import_a_package_counts_as_importing_that_package() -> None:
    source = "import codeflux\nfrom codeflux import __version__\nfrom codeflux import server\n"
    assert violations_in(source, "store/migrations.py") == ["codeflux.server"]


def test_a_dotted_third_party_allowance_matches_however_it_is_spelled() -> None:
    source = (
        "from google import protobuf\nfrom google.protobuf import descriptor\nimport grpc.aio\n"
        "import google.cloud\nimport httpx\n"
    )
    assert violations_in(source, "worker/tools.py") == ["google.cloud", "httpx"]


def test_a_constant_dynamic_import_is_checked_like_an_import_statement() -> None:
    source = "import importlib\nimportlib.import_module('keyring')\n__import__('pygit2')\n"
    assert violations_in(source, "redact/pipeline.py") == ["keyring", "pygit2"]


def test_top_level_modules_may_use_structlog_and_redaction_but_not_the_store() -> None:
    source = "import structlog\nfrom codeflux.redact import pipeline\nfrom codeflux import store\n"
    assert violations_in(source, "logs.py") == ["codeflux.store"]


def test_a_package_missing_from_the_table_is_reported() -> None:
    found = find_violations("import os\n", relative=Path("plugins/loader.py"), layout=EXAMPLE_LAYOUT)
    assert [v.why for v in found] == ["package 'plugins' has no row in the import table"]


@pytest.mark.parametrize("adapter", ["server", "cli"])
def test_the_coordinator_may_not_import_the_adapters(adapter: str) -> None:
    assert violations_in(f"from codeflux.{adapter} import main\n", "coordinator/tasks/service.py") == [
        f"codeflux.{adapter}.main"
    ]


@pytest.mark.parametrize("adapter", ["services", "cli"])
def test_an_adapter_importing_a_store_module_beyond_the_database_and_its_location_is_reported(adapter: str) -> None:
    source = (
        "from codeflux.store.database import Database\nfrom codeflux.store.location import DataLocation\n"
        "from codeflux.store.opening import open_store\nimport codeflux.store.database\n"
        "from codeflux.store import events\nfrom codeflux.store.app_logs import purge_app_logs\n"
        "from codeflux import store\nfrom codeflux.coordinator.maintenance import check_integrity\n"
    )
    assert violations_in(source, f"{adapter}/x.py") == [
        "codeflux.store.events", "codeflux.store.app_logs.purge_app_logs", "codeflux.store"
    ]


def test_a_store_violation_by_an_adapter_names_the_modules_it_may_use() -> None:
    found = find_violations("from codeflux.store import events\n", relative=Path("services/x.py"),
                            layout=EXAMPLE_LAYOUT)
    assert [v.why for v in found] == [
        "codeflux.services may import from codeflux.store only codeflux.store.database, codeflux.store.location, "
        "codeflux.store.opening; reach the rest through a coordinator function"
    ]


@pytest.mark.parametrize(
    ("module", "imported", "allowed"),
    [
        ("coordinator/runs/loop.py", "codeflux.coordinator.tasks.service", True),
        ("coordinator/runs/loop.py", "codeflux.coordinator.spending.gateway", True),
        ("coordinator/runs/loop.py", "codeflux.coordinator.hooks", True),
        ("coordinator/tasks/recovery.py", "codeflux.coordinator.spending.gateway", True),
        ("coordinator/tasks/recovery.py", "codeflux.coordinator.runs.tool_driver", False),
        ("coordinator/spending/gateway.py", "codeflux.coordinator.tasks.service", False),
        ("coordinator/spending/gateway.py", "codeflux.coordinator.hooks", False),
        ("coordinator/hooks.py", "codeflux.coordinator.runs.tool_driver", False),
        ("coordinator/tasks/__init__.py", "codeflux.coordinator.runs", False),
        ("coordinator/maintenance.py", "codeflux.coordinator.tasks.records", False),
        ("coordinator/maintenance.py", "codeflux.coordinator.journal", True),
    ],
)
def test_a_coordinator_wing_may_import_only_the_floors_below_it(module: str, imported: str, allowed: bool) -> None:
    *package, name = imported.split(".")
    assert violations_in(f"from {'.'.join(package)} import {name}\n", module) == ([] if allowed else [imported])


def test_a_wing_violation_names_the_wing_and_what_it_may_lean_on() -> None:
    found = find_violations("from codeflux.coordinator.runs import loop\n",
                            relative=Path("coordinator/tasks/service.py"), layout=EXAMPLE_LAYOUT)
    assert [str(v) for v in found] == [
        "codeflux/coordinator/tasks/service.py:1 imports codeflux.coordinator.runs.loop: codeflux.coordinator.tasks "
        f"may lean on: {IMPORT_TABLE['coordinator.tasks'].describe()}"
    ]


def test_the_worker_process_never_imports_the_coordinators_side_of_its_link() -> None:
    """``worker/client`` is the coordinator's half of the worker link (it starts workers, talks to them);
    the worker process itself (every other module under ``worker/``) must not depend on it."""
    worker = SOURCE_ROOT / "worker"
    reaching = sorted(
        str(path.relative_to(SOURCE_ROOT))
        for path in worker.rglob("*.py")
        if "client" not in path.relative_to(worker).parts
        and re.search(r"^\s*(from|import)\s+codeflux\.worker\.client\b", path.read_text(), re.MULTILINE)
    )
    assert reaching == []


def _first_party_imports(path: Path, modules: set[str]) -> set[str]:
    """The codeflux modules ``path`` imports anywhere (``TYPE_CHECKING`` blocks and functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        found |= {name for name in names if name in modules}
    return found


def test_no_two_codeflux_modules_import_each_other_even_indirectly() -> None:
    paths = {}
    for path in SOURCE_ROOT.rglob("*.py"):
        relative = path.relative_to(SOURCE_ROOT.parent).with_suffix("")
        paths[".".join(relative.parts[:-1] if relative.name == "__init__" else relative.parts)] = path
    graph = {name: _first_party_imports(path, set(paths)) - {name} for name, path in paths.items()}
    cycles: list[list[str]] = []
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            cycles.append([*trail[trail.index(name):], name])
            return
        if name in done:
            return
        for imported in sorted(graph[name]):
            visit(imported, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert cycles == []
