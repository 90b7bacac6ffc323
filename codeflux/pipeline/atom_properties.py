"""Stage 9 atom-property-tests (non-gating): each atom taking variable data is reached by a Hypothesis ``@given`` test.

1. **Variable data**: an atom whose definition has a parameter other than ``self``/``cls`` (read from its syntax
   tree in the final tree). Atoms without one are listed as not needing a property test.
2. **Hypothesis is declared**: the repository names ``hypothesis`` as a dependency in ``pyproject.toml``
   (``[project] dependencies``, ``[project.optional-dependencies]``, ``[dependency-groups]``, Poetry's groups),
   a ``requirements*.txt`` (top level or ``requirements/``), ``setup.cfg`` or ``tox.ini``. When it does not, the
   stage is ``skipped`` saying so: the loop never adds a test importing a package the repository does not declare.
3. **Property tests**: test functions in the repository's test files (``test_*.py``/``*_test.py`` or under a
   ``tests``/``test`` folder) decorated with ``given`` imported from ``hypothesis`` (``@given``,
   ``@hypothesis.given``, or an alias), found by syntax tree.
4. **Reaching it**: such a test's pytest node id is among the tests the coverage map (shared with stages 8 and 11:
   :func:`~codeflux.pipeline.atom_coverage.atom_coverage`) saw executing a line of the atom's body.

Gate: every atom with variable data is reached by at least one property test; otherwise a finding "no property
test reaches X" per atom. Failing never sends work back (its findings join an attempt a send-back gate starts).
Not claimed: that the property asserts anything about the atom's result, or that the strategies are good.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atom_coverage import atom_coverage, tests_of_atom
from codeflux.pipeline.atom_facts import AtomFacts
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["evaluate_atom_property_tests", "hypothesis_declared", "property_tests", "variable_parameters"]

_STAGE: Final = StageName.ATOM_PROPERTY_TESTS
_HYPOTHESIS: Final = re.compile(r"(?<![\w.-])hypothesis(?![\w-])(?:\s*\[[^\]]*\])?\s*(?:[<>=!~;,\"'\s]|$)",
                                re.IGNORECASE)
_MAX_TEST_FILES: Final = 2000
_MAX_FILE_BYTES: Final = 2 * 1024 * 1024
_SKIPPED_DIRECTORIES: Final = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", "build",
                                         "dist", ".hypothesis"})


def _names_hypothesis(values: object) -> bool:
    if isinstance(values, str):
        return bool(_HYPOTHESIS.match(values.strip()))
    if isinstance(values, list):
        return any(_names_hypothesis(value) for value in values)
    if isinstance(values, Mapping):
        return any(str(key).lower() == "hypothesis" or _names_hypothesis(value) for key, value in values.items())
    return False


def _read(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_FILE_BYTES:
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _in_pyproject(text: str) -> bool:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    project = document.get("project", {})
    tool = document.get("tool", {})
    poetry = tool.get("poetry", {}) if isinstance(tool, dict) else {}
    if not isinstance(project, dict) or not isinstance(poetry, dict):
        return False
    groups = poetry.get("group") or {}
    places = [project.get("dependencies"), project.get("optional-dependencies"), document.get("dependency-groups"),
              poetry.get("dependencies"), poetry.get("dev-dependencies"),
              *(group.get("dependencies") for group in (groups.values() if isinstance(groups, dict) else ())
                if isinstance(group, dict))]
    return any(_names_hypothesis(place) for place in places)


def _in_ini(text: str) -> bool:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return False
    return any((key in {"deps", "tests_require", "install_requires"} or section == "options.extras_require")
               and any(_names_hypothesis(line) for line in value.splitlines())
               for section in parser.sections() for key, value in parser.items(section))


def hypothesis_declared(root: Path) -> str | None:
    """Where the repository at ``root`` declares ``hypothesis`` as a dependency (a file name), or None."""
    text = _read(root / "pyproject.toml")
    if text is not None and _in_pyproject(text):
        return "pyproject.toml"
    for path in [*sorted(root.glob("requirements*.txt")), *sorted(root.glob("requirements/*.txt"))]:
        found = _read(path)
        if found is not None and any(_names_hypothesis(line.split("#")[0]) for line in found.splitlines()):
            return path.relative_to(root).as_posix()
    for name in ("setup.cfg", "tox.ini"):
        found = _read(root / name)
        if found is not None and _in_ini(found):
            return name
    return None


def variable_parameters(source: str, atom: Atom) -> tuple[str, ...] | None:
    """The parameters of ``atom`` other than ``self``/``cls`` (None: its definition was not found)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)]) != atom.first_line:
            continue
        arguments = node.args
        names = [argument.arg for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
        names += [argument.arg for argument in (arguments.vararg, arguments.kwarg) if argument is not None]
        return tuple(name for name in names if name not in ("self", "cls"))
    return None


def _is_test_file(relative: Path) -> bool:
    return relative.suffix == ".py" and (relative.name.startswith("test_") or relative.stem.endswith("_test")
                                         or any(part in ("tests", "test") for part in relative.parts[:-1]))


def _test_files(root: Path) -> Iterator[Path]:
    count = 0
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if any(part in _SKIPPED_DIRECTORIES for part in relative.parts) or not _is_test_file(relative):
            continue
        count += 1
        if count > _MAX_TEST_FILES:
            return
        yield relative


def _given_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The local names bound to ``hypothesis.given`` and to the ``hypothesis`` module."""
    given, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "hypothesis":
            given |= {alias.asname or alias.name for alias in node.names if alias.name == "given"}
        elif isinstance(node, ast.Import):
            modules |= {alias.asname or alias.name for alias in node.names if alias.name == "hypothesis"}
    return given, modules


def _decorated_with_given(node: ast.FunctionDef | ast.AsyncFunctionDef, given: set[str], modules: set[str]) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name) and target.id in given:
            return True
        if isinstance(target, ast.Attribute) and target.attr == "given" and isinstance(target.value, ast.Name) \
                and target.value.id in modules:
            return True
    return False


def property_tests(root: Path) -> tuple[str, ...]:
    """The node ids (``path::[Class::]name``) of the ``@given`` tests in the repository at ``root``."""
    found: list[str] = []
    for relative in _test_files(root):
        text = _read(root / relative)
        if text is None or "hypothesis" not in text:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        given, modules = _given_names(tree)
        if not given and not modules:
            continue
        path = relative.as_posix()
        for node in tree.body:
            scopes = [(node, "")] if not isinstance(node, ast.ClassDef) else [
                (item, f"{node.name}::") for item in node.body]
            for item, prefix in scopes:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith("test") \
                        and _decorated_with_given(item, given, modules):
                    found.append(f"{path}::{prefix}{item.name}")
    return tuple(found)


def _reaches(test: str, properties: tuple[str, ...]) -> bool:
    return any(test == node or test.startswith(f"{node}[") for node in properties)


def evaluate_atom_property_tests(facts: AtomFacts) -> StageResult:
    """Stage 9 (see the module docstring)."""
    atoms = facts.diff.atoms
    if not atoms:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the diff adds or changes no function or method outside "
                            "tests: there is no atom to test with properties", {"atoms": []})
    worktree = facts.ports.facts.worktree.path
    variable: list[tuple[Atom, tuple[str, ...]]] = []
    fixed: list[dict[str, object]] = []
    for atom in atoms:
        source = _read(worktree / atom.path)
        parameters = None if source is None else variable_parameters(source, atom)
        if parameters:
            variable.append((atom, parameters))
        else:
            fixed.append({"qualified_name": atom.qualified_name, "path": atom.path, "variable_inputs": [],
                          "skipped": "takes no variable data (no parameter other than self/cls)"})
    if not variable:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "no atom takes variable data (no parameter other than "
                            "self/cls): there is nothing to generate inputs for", {"atoms": fixed})
    declared = hypothesis_declared(worktree)
    if declared is None:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the repository does not declare Hypothesis as a "
                            "dependency (pyproject.toml, requirements*.txt, setup.cfg, tox.ini): property tests are "
                            "not asked of it, and the loop never adds a test importing an undeclared package",
                            {"atoms": fixed})
    measured = atom_coverage(facts)
    if measured.problem is not None or measured.coverage is None:
        return stage_result(_STAGE, StageOutcome.BLOCKED, f"which tests execute each atom was not measured: "
                            f"{measured.detail}", {})
    properties = property_tests(worktree)
    entries: list[dict[str, object]] = []
    findings: list[str] = []
    for atom, parameters in variable:
        covering = tests_of_atom(worktree, atom, measured.coverage, passed_only=False)
        reaching = [test for test in covering if _reaches(test, properties)]
        entry: dict[str, object] = {"qualified_name": atom.qualified_name, "path": atom.path,
                                    "variable_inputs": list(parameters), "property_tests": reaching}
        if not reaching:
            finding = f"no property test (Hypothesis @given) reaches {atom.qualified_name} ({atom.path})"
            entry["findings"] = [finding]
            findings.append(finding)
        entries.append(entry)
    evidence: dict[str, object] = {"atoms": [*entries, *fixed], "hypothesis_declared_in": declared,
                                   "property_tests_found": list(properties[:200]), "findings": findings,
                                   "diff_identity": facts.diff_identity}
    said = (f"{len(variable)} atom(s) with variable data; {len(variable) - len(findings)} reached by a property test "
            f"({len(properties)} @given test(s) found)")
    if findings:
        return stage_result(_STAGE, StageOutcome.FAILED, "; ".join([said, *findings[:10]]), evidence)
    return stage_result(_STAGE, StageOutcome.SATISFIED, said, evidence)
