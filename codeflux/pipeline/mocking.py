"""Whether the tests that cover a changed atom replace it with a mock (stage 28's report; evidence, never a gate).

A test that executes an atom can still stand it in for a fake elsewhere in the same test (the atom runs in one
call, a mock answers the next), and a test of a *caller* that patches the atom shows nothing about the two
together. So for every changed atom, each test the coverage map saw executing its body is read (with codeflux's
own interpreter, :mod:`ast`; nothing of the repository runs) for a replacement of the atom's name:

- ``patch("pkg.mod.name", …)`` — ``unittest.mock.patch``/``mock.patch``/``mocker.patch``, as a call, a context
  manager or a decorator — whose target's last part is the atom's name;
- ``patch.object(obj, "name", …)`` and ``mocker.patch.object(…)``;
- ``monkeypatch.setattr(obj, "name", …)``, ``monkeypatch.setattr("pkg.mod.name", …)`` and ``monkeypatch.delattr``.

Where: the test function and its decorators, its class's decorators and ``setUp``/``setup_method``, and the
fixtures it asks for by parameter name that are defined in its module or a ``conftest.py`` between the module and
the worktree's root (one level of fixtures, not the fixtures those request). A replacement is matched **by name**
(the last part of the dotted target, or the attribute string): a patch of ``pkg.other.add`` counts for an atom
``pkg.calc.add`` — a test may patch the name where a caller imported it — and the evidence says so ("by name");
``pkg.calc.add``, or ``calc.add`` where ``calc`` is the module's last part, is "qualified name".
Not seen: replacements built dynamically (``setattr(module, name_variable, …)``, a target string assembled at run
time), in helpers the test calls, or in fixtures of fixtures.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.domain.contracts import dotted_name
from codeflux.pipeline.atom_coverage import measured_coverage, tests_of_atom
from codeflux.pipeline.atom_facts import AtomFacts

__all__ = ["MOCKING_NOT_SEEN", "Replacement", "mocking_evidence", "mocking_report"]

MOCKING_NOT_SEEN: Final = (
    "replacements built at run time (a computed attribute name or target string), in helpers a test calls, or in "
    "fixtures that a requested fixture requests"
)
_PATCHERS: Final = frozenset({"patch"})
_MONKEYPATCH_METHODS: Final = frozenset({"setattr", "delattr"})
_SETUP_METHODS: Final = frozenset({"setUp", "setup_method", "setup", "setUpClass", "setup_class"})
_MAX_FILE_BYTES: Final = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class Replacement:
    """One place that replaces a name: the file and line, the form, and the name it replaces."""

    path: str
    line: int
    form: str
    target: str

    @property
    def name(self) -> str:
        return self.target.rpartition(".")[2]


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _replacement(call: ast.Call, path: str) -> Replacement | None:
    """The name ``call`` replaces, if it is one of the module docstring's forms."""
    function = dotted_name(call.func)
    if function is None:
        return None
    parts = function.split(".")
    first = call.args[0] if call.args else None
    if parts[-1] in _PATCHERS:  # patch("a.b.name") / mock.patch / mocker.patch
        target = _string(first) or _string(next((k.value for k in call.keywords if k.arg == "target"), None))
        return None if target is None else Replacement(path=path, line=call.lineno, form=function, target=target)
    if len(parts) >= 2 and parts[-1] == "object" and parts[-2] in _PATCHERS:  # patch.object(obj, "name")
        attribute = _string(call.args[1]) if len(call.args) > 1 else None
        owner = dotted_name(first) if first is not None else None
        return None if attribute is None else Replacement(path=path, line=call.lineno, form=function,
                                                          target=f"{owner or '?'}.{attribute}")
    if len(parts) >= 2 and parts[-1] in _MONKEYPATCH_METHODS and "monkeypatch" in parts[-2]:
        text = _string(first)
        dotted_form = 1 if parts[-1] == "delattr" else 2  # setattr("a.b.name", value) / delattr("a.b.name")
        if text is not None and "." in text and len(call.args) == dotted_form:
            return Replacement(path=path, line=call.lineno, form=function, target=text)
        attribute = _string(call.args[1]) if len(call.args) > 1 else None
        owner = dotted_name(first) if first is not None else None
        return None if attribute is None else Replacement(path=path, line=call.lineno, form=function,
                                                          target=f"{owner or '?'}.{attribute}")
    return None


def _replacements_in(nodes: Sequence[ast.AST], path: str) -> list[Replacement]:
    found: list[Replacement] = []
    for node in nodes:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call):
                replacement = _replacement(inner, path)
                if replacement is not None:
                    found.append(replacement)
    return found


class _Module:
    """One parsed test or conftest file: its top-level functions, classes and fixtures."""

    def __init__(self, path: str, tree: ast.Module) -> None:
        self.path = path
        self.functions = {node.name: node for node in tree.body
                          if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def _parse(worktree: Path, relative: str, cache: dict[str, _Module | None]) -> _Module | None:
    if relative in cache:
        return cache[relative]
    parsed: _Module | None = None
    target = worktree / relative
    try:
        if not target.is_symlink() and target.is_file() and target.stat().st_size <= _MAX_FILE_BYTES:
            parsed = _Module(relative, ast.parse(target.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        parsed = None
    cache[relative] = parsed
    return parsed


def _conftests(relative: str) -> Iterator[str]:
    folder = PurePosixPath(relative).parent
    while True:
        yield str(folder / "conftest.py") if str(folder) != "." else "conftest.py"
        if str(folder) in (".", ""):
            return
        folder = folder.parent


def _test_places(worktree: Path, node_id: str, cache: dict[str, _Module | None]) -> list[Replacement]:
    """Every replacement the test ``node_id`` makes where the module docstring looks."""
    relative, _, rest = node_id.partition("::")
    module = _parse(worktree, relative, cache)
    if module is None or not rest:
        return []
    names = [part.partition("[")[0] for part in rest.split("::")]
    owner: ast.ClassDef | None = module.classes.get(names[0]) if len(names) > 1 else None
    function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    if owner is not None:
        function = next((node for node in owner.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                         and node.name == names[-1]), None)
    elif len(names) == 1:
        function = module.functions.get(names[0])
    if function is None:
        return []
    places: list[ast.AST] = [function, *function.decorator_list]
    if owner is not None:
        places.extend(owner.decorator_list)
        places.extend(node for node in owner.body
                      if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in _SETUP_METHODS)
    found = _replacements_in(places, relative)
    requested = {argument.arg for argument in (*function.args.posonlyargs, *function.args.args,
                                               *function.args.kwonlyargs)} - {"self", "cls"}
    for name in sorted(requested):
        for source in (relative, *_conftests(relative)):
            holder = _parse(worktree, source, cache)
            fixture = holder.functions.get(name) if holder is not None else None
            if fixture is not None:
                found.extend(_replacements_in([fixture], source))
                break
    return found


def _names_the_atom(target: str, atom: Atom) -> bool:
    """Whether ``target`` is the atom's own place: its qualified name, or its local name under a tail of its module
    (``calc.add`` for ``pkg.calc.add``, where ``calc`` is the module a test imported)."""
    if target == atom.qualified_name:
        return True
    if not target.endswith(f".{atom.local_name}"):
        return False
    owner = target[:-len(atom.local_name) - 1]
    module = atom.qualified_name[:-len(atom.local_name) - 1]
    return module == owner or module.endswith(f".{owner}")


def mocking_evidence(facts: AtomFacts | None) -> dict[str, object]:
    """Stage 28's ``mocking`` evidence: per changed atom, the covering tests (phase B's coverage map — never a run
    of its own) that replace its name; or why it could not be said."""
    if facts is None:
        return {"measured": False, "why": "the diff did not assemble: no atom was examined"}
    if not facts.diff.atoms:
        return {"measured": True, "atoms": [], "why": "the diff adds or changes no function or method outside tests"}
    measured = measured_coverage(facts)
    usable = measured.usable(to="say which tests cover each atom") if measured is not None else \
        "no stage of this attempt measured which tests execute each atom"
    if isinstance(usable, str):
        return {"measured": False, "why": usable}
    _, _, coverage = usable
    worktree = facts.ports.facts.worktree.path
    by_atom = {atom.qualified_name: tests_of_atom(worktree, atom, coverage) for atom in facts.diff.atoms}
    report = mocking_report(worktree, facts.diff.atoms, by_atom)
    return {"measured": True, "atoms": report, "mocked": sorted(str(entry["atom"]) for entry in report
                                                                 if entry["mocked_in"]),
            "not_seen": MOCKING_NOT_SEEN}


def mocking_report(worktree: Path, atoms: Sequence[Atom], tests_by_atom: Mapping[str, Sequence[str]]
                   ) -> list[dict[str, object]]:
    """Per atom with covering tests: the tests that replace its name, where and how (see the module docstring)."""
    cache: dict[str, _Module | None] = {}
    places: dict[str, list[Replacement]] = {}
    report: list[dict[str, object]] = []
    for atom in atoms:
        tests = list(tests_by_atom.get(atom.qualified_name, ()))
        if not tests:
            continue
        mocked: list[dict[str, object]] = []
        for test in tests:
            if test not in places:
                places[test] = _test_places(worktree, test, cache)
            for replacement in places[test]:
                if replacement.name != atom.name:
                    continue
                exact = _names_the_atom(replacement.target, atom)
                mocked.append({"test": test, "at": f"{replacement.path}:{replacement.line}",
                               "form": replacement.form, "target": replacement.target,
                               "match": "qualified name" if exact else "by name"})
        report.append({"atom": atom.qualified_name, "tests": len(tests),
                       "mocked_in": sorted({str(item["test"]) for item in mocked}), "replacements": mocked})
    return report
