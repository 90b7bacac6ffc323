"""An atom's stub: its body replaced by ``raise NotImplementedError`` (libcst); docstring, signature, decorators kept.

:func:`stub_atom` rewrites one function or method of a module's source, found by its local name (``Class.method``,
``outer.inner``) and its first line; everything else of the file stays byte for byte. It runs with codeflux's
own interpreter over text (nothing of the repository is executed) — libcst reads only the atom's own lines
(:func:`~codeflux.pipeline.atom_source.atom_source`); the result is written only into a scratch copy.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from codeflux.pipeline.atom_source import atom_source

__all__ = ["stub_atom"]


def _is_docstring(statement: cst.BaseStatement | cst.BaseSmallStatement) -> bool:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        expression = statement.body[0]
        return isinstance(expression, cst.Expr) and isinstance(expression.value,
                                                               cst.SimpleString | cst.ConcatenatedString)
    return False


class _Stubber(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, local_name: str, first_line: int, message: str) -> None:
        super().__init__()
        self._wanted = local_name.split(".")
        self._first_line = first_line
        self._message = message
        self._stack: list[str] = []
        self.replaced = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._stack.append(node.name.value)
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self._stack.pop()
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._stack.append(node.name.value)
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        matches = self._stack == self._wanted and self._starts_at_first_line(original_node)
        self._stack.pop()
        if not matches:
            return updated_node
        self.replaced += 1
        raising = cst.SimpleStatementLine(body=[cst.Raise(exc=cst.Call(
            func=cst.Name("NotImplementedError"), args=[cst.Arg(cst.SimpleString(repr(self._message)))]))])
        body = updated_node.body
        first: cst.BaseStatement | None = None
        if isinstance(body, cst.IndentedBlock) and body.body:
            first = body.body[0]
        elif isinstance(body, cst.SimpleStatementSuite) and body.body:
            first = cst.SimpleStatementLine(body=[body.body[0]])
        kept = [first] if first is not None and _is_docstring(first) else []
        return updated_node.with_changes(body=cst.IndentedBlock(body=[*kept, raising]))

    def _starts_at_first_line(self, node: cst.FunctionDef) -> bool:
        position = self.get_metadata(PositionProvider, node)
        lines = {position.start.line, *(self.get_metadata(PositionProvider, decorator).start.line
                                        for decorator in node.decorators)}
        return self._first_line in lines


def stub_atom(source: str, *, local_name: str, first_line: int) -> str | None:
    """``source`` with the function ``local_name`` starting at ``first_line`` (decorators included) stubbed, or None
    when it is not found exactly once or the source does not parse."""
    part = atom_source(source, local_name=local_name, first_line=first_line)
    try:
        module = cst.parse_module(part.text)
    except cst.ParserSyntaxError:
        return None
    stubber = _Stubber(part.local_name, part.text_line(first_line), f"codeflux stub of {local_name}")
    stubbed = MetadataWrapper(module, unsafe_skip_copy=True).visit(stubber)
    if stubber.replaced != 1:
        return None
    return part.in_module(stubbed.code)
