"""Stage 17 atom-documentation: each public atom's docstring, read with :mod:`ast` (no code is run).

The stage is **advisory** (issue 17): it records ``satisfied`` with its **findings** listed and never fails — it
never decides a run's exit code, and its findings are evidence for the reviewer. Every public atom (no part of
its name private; magic methods other than ``__init__`` and ``__call__`` are not checked) is read: one whose
docstring does not state its purpose in a first line is a finding (``no-docstring``), and the docstring is
compared with the signature and the body, each mismatch a finding:

* the parameters (``self``/``cls`` of a method aside; ``*args`` and ``**kwargs`` by name) must each be
  documented, and nothing documented may be missing from the signature. A docstring in Google style
  (``Args:``/``Arguments:``/``Parameters:``), NumPy style (``Parameters`` underlined) or Sphinx style
  (``:param name:``) is read; a docstring with no parameter section for a function that has parameters is a
  finding. ``__init__`` may document its parameters in the class docstring instead;
* a function whose own body returns a value (``return`` with something other than ``None``) needs a returns
  section (Google ``Returns:``/``Yields:``, NumPy ``Returns``/``Yields``, Sphinx ``:returns:``/``:rtype:``) —
  a generator a yields section; properties and ``__init__`` are exempt;
* a function whose own body raises an exception (not a bare re-raise) needs a raises section (Google
  ``Raises:``, NumPy ``Raises``, Sphinx ``:raises X:``) naming each exception class it raises.

What it does not prove: that the docstring is true — only its presence and its agreement with the signature
and with what the body visibly returns and raises are checked. Private atoms are listed, not checked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from codeflux.domain.atoms import Atom
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.pipeline.atoms import DiffAtoms
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["DocumentedSections", "documentation_findings", "evaluate_atom_documentation", "sections_of"]

_STAGE: Final = StageName.ATOM_DOCUMENTATION
_SHOWN: Final = 5
_CHECKED_MAGIC: Final = frozenset({"__init__", "__call__"})
_FUNCTIONS: Final = (ast.FunctionDef, ast.AsyncFunctionDef)
_GOOGLE_HEADER: Final = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_PARAMETERS: Final = frozenset({"args", "arguments", "parameters", "params", "keyword args",
                                       "keyword arguments", "other parameters"})
_GOOGLE_RETURNS: Final = frozenset({"returns", "return", "yields", "yield"})
_GOOGLE_RAISES: Final = frozenset({"raises", "raise", "exceptions"})
_NUMPY_UNDERLINE: Final = re.compile(r"^\s*-{3,}\s*$")
_SPHINX_PARAM: Final = re.compile(r":(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:")
_SPHINX_RETURNS: Final = re.compile(r":(?:returns?|rtype|yields?|ytype)\s*:")
_SPHINX_RAISES: Final = re.compile(r":(?:raises?|except|exception)\b([^:]*):")
_ENTRY_NAME: Final = re.compile(r"^\*{0,2}(\w+)")


@dataclass(slots=True, kw_only=True)
class DocumentedSections:
    """What a docstring documents: its styles seen, the parameter names, whether it has returns and raises
    sections, and the text of its raises sections (where exception names are looked up)."""

    styles: set[str] = field(default_factory=set)
    parameters: set[str] | None = None  # None: no parameter section at all
    returns: bool = False
    raises: bool = False
    raises_text: str = ""

    def add_parameter(self, name: str) -> None:
        if self.parameters is None:
            self.parameters = set()
        self.parameters.add(name)


def _google_and_numpy(lines: list[str], found: DocumentedSections) -> None:
    section: str | None = None
    indent = 0
    entry_indent: int | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        following = lines[index + 1] if index + 1 < len(lines) else ""
        header = _GOOGLE_HEADER.match(line)
        if stripped and _NUMPY_UNDERLINE.match(following) and not _NUMPY_UNDERLINE.match(line):
            section, indent, entry_indent = stripped.lower(), len(line) - len(line.lstrip()), None
            found.styles.add("numpy")
            _open(section, found)
            index += 2
            continue
        if header is not None:
            section, indent, entry_indent = header.group("name").strip().lower(), len(line) - len(line.lstrip()), None
            if section in _GOOGLE_PARAMETERS | _GOOGLE_RETURNS | _GOOGLE_RAISES:
                found.styles.add("google")
                _open(section, found)
            index += 1
            continue
        if section is not None and stripped:
            depth = len(line) - len(line.lstrip())
            if depth < indent or (depth == indent and "numpy" not in found.styles):
                section = None
            else:
                if entry_indent is None:
                    entry_indent = depth
                if depth == entry_indent:
                    _entry(section, stripped, found)
        index += 1


def _open(section: str, found: DocumentedSections) -> None:
    if section in _GOOGLE_PARAMETERS and found.parameters is None:
        found.parameters = set()
    elif section in _GOOGLE_RETURNS:
        found.returns = True
    elif section in _GOOGLE_RAISES:
        found.raises = True


def _entry(section: str, text: str, found: DocumentedSections) -> None:
    if section in _GOOGLE_PARAMETERS:
        names = text.split(":", 1)[0].split("(", 1)[0]
        for part in names.split(","):  # NumPy allows "x, y : int"
            match = _ENTRY_NAME.match(part.strip())
            if match is not None:
                found.add_parameter(match.group(1))
    elif section in _GOOGLE_RAISES:
        found.raises_text += f" {text}"


def sections_of(docstring: str) -> DocumentedSections:
    """The sections of ``docstring`` in any of the three styles (see the module docstring)."""
    found = DocumentedSections()
    _google_and_numpy(docstring.expandtabs().splitlines(), found)
    sphinx_params = _SPHINX_PARAM.findall(docstring)
    if sphinx_params:
        found.styles.add("sphinx")
        for name in sphinx_params:
            found.add_parameter(name)
    if _SPHINX_RETURNS.search(docstring):
        found.styles.add("sphinx")
        found.returns = True
    raised = _SPHINX_RAISES.findall(docstring)
    if raised:
        found.styles.add("sphinx")
        found.raises = True
        found.raises_text += " " + " ".join(raised)
    return found


# ─── what the function's own body does ────────────────────────────────────────────────────────────────

def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of ``function``'s body, not descending into nested functions, lambdas or classes."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _returns_value(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any((isinstance(node, ast.Return) and node.value is not None
                and not (isinstance(node.value, ast.Constant) and node.value.value is None))
               or isinstance(node, (ast.Yield, ast.YieldFrom)) for node in _own_nodes(function))


def _raised(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The exception classes ``function``'s own body raises, in source order."""
    names: list[str] = []
    for node in sorted(_own_nodes(function), key=lambda item: (getattr(item, "lineno", 0),
                                                               getattr(item, "col_offset", 0))):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(target, ast.Name):
            name = target.id
        elif isinstance(target, ast.Attribute):
            name = target.attr
        else:
            continue
        if name[:1].isupper() and name not in names:
            names.append(name)
    return names


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef, *, is_method: bool) -> list[str]:
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    static = any(isinstance(decorator, ast.Name) and decorator.id == "staticmethod"
                 for decorator in function.decorator_list)
    if is_method and not static and positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    names = [argument.arg for argument in positional]
    if arguments.vararg is not None:
        names.append(arguments.vararg.arg)
    names.extend(argument.arg for argument in arguments.kwonlyargs)
    if arguments.kwarg is not None:
        names.append(arguments.kwarg.arg)
    return names


def _is_property(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any((isinstance(decorator, ast.Name) and decorator.id in ("property", "cached_property"))
               or (isinstance(decorator, ast.Attribute) and decorator.attr in ("setter", "getter", "deleter",
                                                                                 "cached_property"))
               for decorator in function.decorator_list)


# ─── one atom ─────────────────────────────────────────────────────────────────────────────────────────

_Located = tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]


def _functions_of(tree: ast.Module) -> list[_Located]:
    """Every function of ``tree`` with the class it is defined in (None outside a class body)."""
    found: list[_Located] = []
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _FUNCTIONS):
                found.append((child, node if isinstance(node, ast.ClassDef) else None))
    return found


def _node_of(functions: list[_Located], atom: Atom) -> _Located | None:
    for function, klass in functions:
        if (function.name == atom.name and function.end_lineno == atom.last_line
                and atom.first_line <= function.lineno <= atom.last_line):
            return function, klass
    return None


def documentation_findings(atom: Atom, function: ast.FunctionDef | ast.AsyncFunctionDef,
                           klass: ast.ClassDef | None) -> tuple[bool, list[str], list[str]]:
    """Whether ``atom`` has a docstring stating its purpose (the gate), its findings (``rule: message``) and the
    docstring styles seen."""
    docstring = ast.get_docstring(function)
    if docstring is None and atom.name == "__init__" and klass is not None:
        docstring = ast.get_docstring(klass)
    if docstring is None or not docstring.strip():
        return False, ["missing-docstring: no docstring states its purpose"], []
    sections = sections_of(docstring)
    findings: list[str] = []
    summary = docstring.strip().splitlines()[0].strip()
    if summary.startswith((":", "Args:", "Parameters", "Returns", "Raises")):
        return False, ["missing-purpose: the docstring opens with a section, not a sentence stating the purpose"], []
    parameters = _parameters(function, is_method=atom.is_method)
    if parameters and sections.parameters is None:
        findings.append(f"no-parameter-section: documents none of its parameters ({', '.join(parameters)})")
    elif sections.parameters is not None:
        findings.extend(f"undocumented-parameter: {name} is not documented" for name in parameters
                        if name not in sections.parameters)
        findings.extend(f"unknown-parameter: documents {name}, which is not a parameter"
                        for name in sorted(sections.parameters) if name not in parameters)
    if (_returns_value(function) and not sections.returns and atom.name != "__init__"
            and not _is_property(function)):
        findings.append("no-returns-section: returns a value but documents no return")
    raised = _raised(function)
    if raised and not sections.raises:
        findings.append(f"no-raises-section: raises {', '.join(raised)} but documents no raises")
    elif raised:
        findings.extend(f"undocumented-exception: raises {name}, not named in its raises section" for name in raised
                        if not re.search(rf"\b{re.escape(name)}\b", sections.raises_text))
    return True, findings, sorted(sections.styles)


def evaluate_atom_documentation(diff: DiffAtoms) -> StageResult:
    """Stage 17 (see the module docstring)."""
    files = [file for file in diff.files if file.problem is None and file.atoms]
    not_examined = dict(sorted(diff.not_examined.items()))
    if not files:
        return stage_result(_STAGE, StageOutcome.SKIPPED, "the diff adds or changes no function outside the tests",
                            {"not_examined": not_examined})
    undocumented: list[str] = []
    findings: list[str] = []
    atoms: list[dict[str, object]] = []
    not_checked: dict[str, str] = {}
    for file in files:
        functions = _functions_of(ast.parse(file.source, filename=file.path))
        for atom in file.atoms:
            if not atom.public:
                not_checked[atom.qualified_name] = "private"
                continue
            if atom.name.startswith("__") and atom.name.endswith("__") and atom.name not in _CHECKED_MAGIC:
                not_checked[atom.qualified_name] = "a magic method"
                continue
            found = _node_of(functions, atom)
            if found is None:
                not_examined[atom.qualified_name] = "its definition was not found at the atom's lines"
                continue
            stated, own, styles = documentation_findings(atom, *found)
            shown = [f"{atom.path}:{found[0].lineno} {item.split(': ', 1)[0]} {atom.qualified_name}: "
                     f"{item.split(': ', 1)[1]}" for item in own]
            if not stated:
                undocumented.extend(shown)
            else:
                findings.extend(shown)
            atoms.append({"qualified_name": atom.qualified_name, "path": atom.path, "purpose_stated": stated,
                          "styles": styles, "findings": shown})
    evidence: dict[str, object] = {
        "tool": {"name": "ast", "provided_by": "codeflux's own interpreter"},
        "styles_read": ["google", "numpy", "sphinx"],
        "atoms": atoms, "findings": [*undocumented, *findings], "not_checked": dict(sorted(not_checked.items())),
        "not_examined": not_examined,
        "does_not_prove": "that a docstring is true: only its presence and its agreement with the signature and "
                          "with what the body visibly returns and raises were checked",
    }
    if not atoms:
        return stage_result(_STAGE, StageOutcome.SKIPPED,
                            "the diff adds or changes no public function outside the tests", evidence)
    counted = f"{len(atoms)} public atom{'s' if len(atoms) != 1 else ''}"
    listed = [*undocumented, *findings]
    purposes = sum(1 for atom in atoms if atom["purpose_stated"])
    summary = (f"; {len(listed)} finding{'s' if len(listed) != 1 else ''} listed (advisory): "
               f"{'; '.join(listed[:_SHOWN])}{' and more' if len(listed) > _SHOWN else ''}" if listed
               else "; parameters, returns and raises agree with the docstrings")
    return stage_result(_STAGE, StageOutcome.SATISFIED,
                        f"{purposes} of {counted} state their purpose in a docstring{summary}", evidence)
