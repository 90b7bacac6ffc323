"""Atoms: the functions and methods a diff adds or changes (ARCHITECTURE §8, phase B).

An **atom** is a function or method defined at module level or in a class (classes nest) of a Python file the
diff adds or changes, that is new at that qualified name or whose syntax tree differs from the base revision's
— a change to a comment or to spacing alone is not a change. A function nested inside another function is part
of its enclosing atom. Test files are not atoms' homes (the caller leaves them out). Everything here is pure:
the caller hands in the two sources; positions come from :mod:`ast`.

:func:`atoms_between` compares one file's base and new source; :func:`changed_lines` lists the new file's
lines the diff adds or rewrites (what phase B's line-scoped checks look at; untouched lines are context only).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Final

__all__ = [
    "Atom",
    "AtomChange",
    "FileAtoms",
    "atoms_between",
    "changed_lines",
    "module_name_of",
]

_FUNCTIONS: Final = (ast.FunctionDef, ast.AsyncFunctionDef)


class AtomChange(StrEnum):
    ADDED = "added"
    CHANGED = "changed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Atom:
    """One added or changed function or method, located in the new source.

    ``qualified_name`` is ``module.Class.name`` (``module`` from :func:`module_name_of`); ``local_name`` is the
    part inside the module (``Class.name``). ``lines`` are its first and last line (decorators included);
    ``changed`` are the lines of it the diff adds or rewrites (none for a change that only removed lines).
    """

    path: str
    qualified_name: str
    local_name: str
    change: AtomChange
    first_line: int
    last_line: int
    signature: str
    changed: tuple[int, ...]
    is_method: bool
    is_async: bool

    @property
    def name(self) -> str:
        return self.local_name.rpartition(".")[2]

    @property
    def public(self) -> bool:
        """No part of its local name starts with an underscore (dunder methods count as public)."""
        return all(not part.startswith("_") or (part.startswith("__") and part.endswith("__"))
                   for part in self.local_name.split("."))

    def to_evidence(self) -> dict[str, object]:
        return {"path": self.path, "qualified_name": self.qualified_name, "change": self.change.value,
                "lines": [self.first_line, self.last_line], "signature": self.signature,
                "changed_lines": list(self.changed), "public": self.public, "method": self.is_method}


@dataclass(frozen=True, slots=True, kw_only=True)
class FileAtoms:
    """What :func:`atoms_between` found in one file: its atoms, or why none could be found (``problem``);
    ``source`` is the new source the atoms were found in (what line-scoped checks read, never the file again)."""

    path: str
    atoms: tuple[Atom, ...]
    changed: tuple[int, ...]
    problem: str | None = None
    source: str = field(default="", repr=False, compare=False)


def module_name_of(path: str, *, src_layout: bool = False) -> str:
    """The dotted module a repository-relative ``.py`` path is imported as (``src/`` dropped for a src layout,
    ``__init__`` names its package)."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if src_layout and len(parts) > 1 and parts[0] == "src":
        parts = parts[1:]
    if len(parts) > 1 and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def changed_lines(old: str, new: str) -> tuple[int, ...]:
    """The 1-based numbers of the lines of ``new`` that are not carried over unchanged from ``old``."""
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    numbers: list[int] = []
    for tag, _, _, start, end in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            numbers.extend(range(start + 1, end + 1))
    return tuple(numbers)


def _definitions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """Every function at module level or in a class (classes nest): its local name, node and whether it is a
    method."""
    stack: list[tuple[str, Sequence[ast.stmt], bool]] = [("", tree.body, False)]
    while stack:
        prefix, body, in_class = stack.pop()
        for node in body:
            if isinstance(node, _FUNCTIONS):
                yield prefix + node.name, node, in_class
            elif isinstance(node, ast.ClassDef):
                stack.append((f"{prefix}{node.name}.", node.body, True))


def _shape(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=True, include_attributes=False)


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"


def atoms_between(path: str, old: str | None, new: str, *, module: str) -> FileAtoms:
    """The atoms of ``path`` (see the module docstring); ``old`` is None for a file the diff adds. A new source
    that does not parse has no atoms and says why; a base that does not parse makes every function added."""
    lines = changed_lines(old or "", new)
    try:
        tree = ast.parse(new, filename=path)
    except (SyntaxError, ValueError) as error:
        return FileAtoms(path=path, atoms=(), changed=lines, source=new,
                         problem=f"does not parse: {type(error).__name__} at line {getattr(error, 'lineno', '?')}")
    before: dict[str, str] = {}
    if old is not None:
        try:
            before = {name: _shape(node) for name, node, _ in _definitions(ast.parse(old, filename=path))}
        except (SyntaxError, ValueError):
            before = {}
    touched = frozenset(lines)
    atoms: list[Atom] = []
    for name, node, is_method in _definitions(tree):
        earlier = before.get(name)
        if earlier == _shape(node):
            continue
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        last = node.end_lineno or node.lineno
        atoms.append(Atom(
            path=path, qualified_name=f"{module}.{name}" if module else name, local_name=name,
            change=AtomChange.ADDED if earlier is None else AtomChange.CHANGED, first_line=first, last_line=last,
            signature=_signature(node), changed=tuple(n for n in range(first, last + 1) if n in touched),
            is_method=is_method, is_async=isinstance(node, ast.AsyncFunctionDef)))
    atoms.sort(key=lambda atom: atom.first_line)
    return FileAtoms(path=path, atoms=tuple(atoms), changed=lines, source=new)
