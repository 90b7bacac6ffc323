"""Every module under codeflux/ imports only what its package may lean on (STYLE.md §1).

The table below is the rule, first-party *and* third-party. A module's package is the first folder under
``codeflux/``; the modules directly in ``codeflux/`` (``logs.py``, the root ``__init__.py``) share the
top-level row. Every package may import itself and the standard library (``sys.stdlib_module_names``).
Importing the root package ``codeflux`` itself (``import codeflux`` for ``__version__``) is allowed
everywhere: it runs whenever any codeflux module is imported anyway. Imports under ``TYPE_CHECKING``
count, and so does ``importlib.import_module("constant")``.

A new folder under ``codeflux/`` fails here until it has a row.
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
EVERY_UNIT = PACKAGES | {TOP_LEVEL}


@dataclass(frozen=True, kw_only=True, slots=True)
class Leans:
    """What one package may import besides itself and the standard library."""

    first_party: frozenset[str]
    third_party: frozenset[str] | None  # None: any installed package

    def describe(self) -> str:
        first = sorted(f"codeflux.{p}" if p in PACKAGES else p for p in self.first_party)
        third = ["any third-party package"] if self.third_party is None else sorted(self.third_party)
        return ", ".join([*first, *third, "the standard library"])


def leans(*first_party: str, third_party: frozenset[str] | None = frozenset()) -> Leans:
    return Leans(first_party=frozenset(first_party), third_party=third_party)


IMPORT_TABLE: dict[str, Leans] = {
    "domain": leans(),
    "store": leans("domain", third_party=frozenset({"apsw", "platformdirs"})),
    "authority": leans("domain", "store"),
    "credentials": leans("domain", "redact", third_party=frozenset({"keyring", "secretstorage", "jeepney"})),
    "redact": leans("domain"),
    "gitwork": leans("domain", third_party=frozenset({"pygit2"})),
    "worker": leans("domain", "api", "redact", third_party=frozenset({"grpc", "google.protobuf"})),
    "providers": leans("domain", "credentials", "redact", third_party=frozenset({"httpx", "pydantic"})),
    "pipeline": leans("domain", "store", "gitwork"),
    "memory": leans("domain", "store"),
    "coordinator": leans(*(EVERY_UNIT - {"services", "server", "cli"}), third_party=None),
    "services": leans(*(EVERY_UNIT - {"server", "cli"}), third_party=None),
    "server": leans(*(EVERY_UNIT - {"cli"}), third_party=None),
    # `codeflux start` runs the server; the server never reaches back into the CLI.
    "cli": leans(*EVERY_UNIT, third_party=None),
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
            return parts[1]
        if parts[1] == MAIN:
            return MAIN
        if parts[1] in self.modules:
            return TOP_LEVEL
        return ROOT  # an attribute of the root package, such as __version__


def unit_of_module(relative: Path) -> str:
    if len(relative.parts) > 1:
        return relative.parts[0]
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
        return allowed_here
    if dotted.partition(".")[0] in sys.stdlib_module_names:
        return None
    if rule.third_party is None or any(within(dotted, allowed) for allowed in rule.third_party):
        return None
    return allowed_here


def _row_name(unit: str) -> str:
    return f"codeflux.{unit}" if unit in PACKAGES else unit


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
