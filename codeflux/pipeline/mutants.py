"""Stage 13's mutants: small rewrites of the lines a diff adds or changes in an atom, made with libcst.

:func:`mutants_of_atom` finds, in one function or method of a module's source (by its local name and first line),
every place on the wanted lines one of six operators applies, and returns one mutated module source per place:

- ``arithmetic``: ``+``↔``-``, ``*``↔``/``, ``//``→``/``, ``%``→``*``, ``**``→``*`` (also in augmented assignments);
- ``comparison``: ``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``, ``is``↔``is not``, ``in``↔``not in``;
- ``boolean``: ``and``↔``or``, ``not x``→``x``, ``True``↔``False``;
- ``constant``: an integer ``n``→``n + 1``, a non-empty string → ``""`` (docstrings are left alone);
- ``return-value``: ``return x``→``return None`` (``return None`` → ``return 0``);
- ``removed-call``: a statement that is only a call → ``pass``.

Only nodes that start on a wanted line are mutated; nested functions are part of the atom. It runs with codeflux's
own interpreter over text (nothing of the repository is executed); each result differs from the source exactly at
its place. Bounded: at most ``limit`` mutants per atom, in source order. libcst reads only the atom's own lines
(:func:`~codeflux.pipeline.atom_source.atom_source`), put back into the file for each mutant.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from codeflux.pipeline.atom_source import atom_source

__all__ = ["OPERATORS", "Mutant", "mutant_diff", "mutants_of_atom"]

OPERATORS: Final = ("arithmetic", "comparison", "boolean", "constant", "return-value", "removed-call")

_ARITHMETIC: Final[dict[type, Callable[[], cst.BaseBinaryOp]]] = {
    cst.Add: cst.Subtract, cst.Subtract: cst.Add, cst.Multiply: cst.Divide, cst.Divide: cst.Multiply,
    cst.FloorDivide: cst.Divide, cst.Modulo: cst.Multiply, cst.Power: cst.Multiply,
}
_AUGMENTED: Final[dict[type, Callable[[], cst.BaseAugOp]]] = {
    cst.AddAssign: cst.SubtractAssign, cst.SubtractAssign: cst.AddAssign, cst.MultiplyAssign: cst.DivideAssign,
    cst.DivideAssign: cst.MultiplyAssign, cst.FloorDivideAssign: cst.DivideAssign,
    cst.ModuloAssign: cst.MultiplyAssign,
}
_COMPARISON: Final[dict[type, Callable[[], cst.BaseCompOp]]] = {
    cst.LessThan: cst.LessThanEqual, cst.LessThanEqual: cst.LessThan, cst.GreaterThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.GreaterThan, cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal, cst.Is: cst.IsNot,
    cst.IsNot: cst.Is, cst.In: cst.NotIn, cst.NotIn: cst.In,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Mutant:
    """One mutated module source: the operator, the line of the mutated node, what it was and became."""

    operator: str
    line: int
    original: str
    replacement: str
    source: str


@dataclass(frozen=True, slots=True)
class _Site:
    node: cst.CSTNode
    operator: str
    line: int
    replacement: cst.CSTNode


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


class _Finder(cst.CSTVisitor):
    """Collects the mutation sites of one atom (see the module docstring)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, local_name: str, first_line: int, lines: Sequence[int]) -> None:
        super().__init__()
        self._wanted = local_name.split(".")
        self._first_line = first_line
        self._lines = frozenset(lines)
        self._stack: list[str] = []
        self._inside = 0
        self._docstrings: set[int] = set()
        self.sites: list[_Site] = []
        self.found = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._stack.append(node.name.value)
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._stack.append(node.name.value)
        if self._inside:
            self._inside += 1
        elif self._stack == self._wanted and self._starts_here(node):
            self.found += 1
            self._inside = 1
        if self._inside:
            body = node.body
            if isinstance(body, cst.IndentedBlock) and body.body:
                first = body.body[0]
                if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 \
                        and isinstance(first.body[0], cst.Expr):
                    self._docstrings.add(id(first.body[0].value))
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._stack.pop()
        if self._inside:
            self._inside -= 1

    def _starts_here(self, node: cst.FunctionDef) -> bool:
        position = self.get_metadata(PositionProvider, node)
        lines = {position.start.line, *(self.get_metadata(PositionProvider, decorator).start.line
                                        for decorator in node.decorators)}
        return self._first_line in lines

    def _add(self, node: cst.CSTNode, operator: str, replacement: cst.CSTNode) -> None:
        if not self._inside:
            return
        line = self.get_metadata(PositionProvider, node).start.line
        if line in self._lines:
            self.sites.append(_Site(node, operator, line, replacement))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        swap = _ARITHMETIC.get(type(node.operator))
        if swap is not None:
            self._add(node, "arithmetic", node.with_changes(operator=swap()))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        swap = _AUGMENTED.get(type(node.operator))
        if swap is not None:
            self._add(node, "arithmetic", node.with_changes(operator=swap()))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        for index, target in enumerate(node.comparisons):
            swap = _COMPARISON.get(type(target.operator))
            if swap is not None:
                changed = list(node.comparisons)
                changed[index] = target.with_changes(operator=swap())
                self._add(node, "comparison", node.with_changes(comparisons=changed))

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        swap = cst.Or() if isinstance(node.operator, cst.And) else cst.And()
        self._add(node, "boolean", node.with_changes(operator=swap))

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._add(node, "boolean", node.expression.with_changes(lpar=node.lpar, rpar=node.rpar))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in ("True", "False"):
            self._add(node, "boolean", node.with_changes(value="False" if node.value == "True" else "True"))

    def visit_Integer(self, node: cst.Integer) -> None:
        self._add(node, "constant", cst.BinaryOperation(left=node, operator=cst.Add(), right=cst.Integer("1"),
                                                        lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if id(node) in self._docstrings:
            return
        if len(node.evaluated_value) > 0:
            quote = node.quote
            self._add(node, "constant", node.with_changes(value=f"{node.prefix}{quote}{quote}"))

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is None:
            return
        is_none = isinstance(node.value, cst.Name) and node.value.value == "None"
        self._add(node, "return-value", node.with_changes(value=cst.Integer("0") if is_none else cst.Name("None")))

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) == 1 and isinstance(node.body[0], cst.Expr) and isinstance(node.body[0].value, cst.Call):
            self._add(node, "removed-call", node.with_changes(body=[cst.Pass()]))


class _Replacer(cst.CSTTransformer):
    def __init__(self, target: cst.CSTNode, replacement: cst.CSTNode) -> None:
        super().__init__()
        self._target = target
        self._replacement = replacement
        self.replaced = 0

    def on_leave(self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT
                 ) -> cst.CSTNodeT | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNodeT]:
        if original_node is self._target:
            self.replaced += 1
            return self._replacement  # type: ignore[return-value]
        return updated_node


def mutants_of_atom(source: str, *, local_name: str, first_line: int, lines: Sequence[int],
                    limit: int = 100) -> tuple[Mutant, ...] | None:
    """The mutants of the atom ``local_name`` starting at ``first_line`` on ``lines`` (see the module docstring);
    None when the source does not parse or the atom is not found exactly once."""
    part = atom_source(source, local_name=local_name, first_line=first_line)
    try:
        module = cst.parse_module(part.text)
    except cst.ParserSyntaxError:
        return None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    finder = _Finder(part.local_name, part.text_line(first_line), [part.text_line(line) for line in lines])
    wrapper.visit(finder)
    if finder.found != 1:
        return None
    mutants: list[Mutant] = []
    for site in finder.sites[:limit]:
        replacer = _Replacer(site.node, site.replacement)
        mutated = part.in_module(module.visit(replacer).code)
        if replacer.replaced != 1 or mutated is None or mutated == source:
            continue
        mutants.append(Mutant(operator=site.operator, line=part.file_line(site.line), original=_code(site.node),
                              replacement=_code(site.replacement), source=mutated))
    return tuple(mutants)


def mutant_diff(path: str, original: str, mutant: Mutant) -> str:
    """The unified diff (one line of context) from ``original`` to the mutant's source."""
    return "".join(difflib.unified_diff(original.splitlines(keepends=True), mutant.source.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}", n=1))
