"""The lines of a module that hold one atom, so libcst rewrites them without parsing and walking the whole file.

Stage 8's stubs and stage 13's mutants rewrite one function of a file that may be a thousand lines long; libcst's
position metadata and each transform over the whole module cost far more than the rewrite (≈ 0.1 s per mutant of a
1,000-line module here). :func:`atom_source` finds the function with :mod:`ast` (by its local name — ``Class.method``,
``outer.inner`` — and a first line, its own or a decorator's), and returns its whole lines, decorators included, as a
small module: as they are when the function is not indented, else under an ``if True:`` line so the indented
block parses. :meth:`AtomSource.in_module` puts a rewritten copy back between the untouched text before and after,
byte for byte. When the lines cannot stand alone — the function shares its first or last line with other code, the
file does not parse with this interpreter's :mod:`ast` (newer syntax libcst still reads), or the name is not found
exactly once — the whole module is the source (the slow path, the same result).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Final

__all__ = ["AtomSource", "atom_source"]

_HEADER: Final = "if True:"


@dataclass(frozen=True, slots=True, kw_only=True)
class AtomSource:
    """What to hand libcst for one atom, and how to map it back (see the module docstring)."""

    text: str
    """The module libcst parses: the atom's lines (under :data:`_HEADER` when indented), or the whole file."""
    local_name: str
    """The atom's name path inside :attr:`text` (its last part when :attr:`text` is the atom's lines alone)."""
    line_shift: int
    """A line of :attr:`text` plus this is the same line of the file."""
    before: str = ""
    after: str = ""
    header: str = ""

    def text_line(self, line: int) -> int:
        """The line of :attr:`text` that is ``line`` of the file."""
        return line - self.line_shift

    def file_line(self, line: int) -> int:
        """The line of the file that is ``line`` of :attr:`text`."""
        return line + self.line_shift

    def in_module(self, rewritten: str) -> str | None:
        """The file with :attr:`text` replaced by ``rewritten`` (None when the header line did not survive)."""
        if not rewritten.startswith(self.header):
            return None
        return self.before + rewritten[len(self.header):] + self.after


class _Finder(ast.NodeVisitor):
    def __init__(self, wanted: list[str], first_line: int) -> None:
        self._wanted = wanted
        self._first_line = first_line
        self._stack: list[str] = []
        self.found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._stack.append(node.name)
        self.generic_visit(node)
        self._stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._stack.append(node.name)
        starts = {node.lineno, *(decorator.lineno for decorator in node.decorator_list)}
        if self._stack == self._wanted and self._first_line in starts:
            self.found.append(node)
        self.generic_visit(node)
        self._stack.pop()


def atom_source(source: str, *, local_name: str, first_line: int) -> AtomSource:
    """The atom's lines as a small module, or the whole file (see the module docstring)."""
    whole = AtomSource(text=source, local_name=local_name, line_shift=0)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return whole
    finder = _Finder(local_name.split("."), first_line)
    finder.visit(tree)
    if len(finder.found) != 1:
        return whole
    node = finder.found[0]
    lines = source.splitlines(keepends=True)
    start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
    end = node.end_lineno
    if end is None or end > len(lines) or not _stands_alone(lines, start, end, node):
        return whole
    first = lines[start - 1]
    indent = first[:len(first) - len(first.lstrip(" \t"))]
    newline = first[len(first.rstrip("\r\n")):] or "\n"
    header = f"{_HEADER}{newline}" if indent else ""
    return AtomSource(text=header + "".join(lines[start - 1:end]), local_name=node.name,
                      line_shift=start - 1 - (1 if header else 0), before="".join(lines[:start - 1]),
                      after="".join(lines[end:]), header=header)


def _stands_alone(lines: list[str], start: int, end: int, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether lines ``start``..``end`` hold the function and nothing else of the file's code."""
    opening = lines[start - 1].lstrip(" \t")
    if not opening.startswith(("@", "def ", "def\t", "async ")):
        return False
    if start > 1 and lines[start - 2].rstrip("\r\n").endswith("\\"):
        return False
    rest = lines[end - 1].encode("utf-8")[node.end_col_offset or 0:].decode("utf-8", "replace").strip()
    return rest == "" or rest.startswith("#")
