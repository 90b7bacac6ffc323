"""libcst reads only an atom's own lines (phase B speed, issue 17): the stubs and mutants made that way are the ones
the whole module gives, on codeflux's own source files and on the awkward layouts that must fall back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codeflux.pipeline import atom_source as atom_source_module
from codeflux.pipeline import mutants as mutants_module
from codeflux.pipeline import stubs as stubs_module
from codeflux.pipeline.atom_source import AtomSource, atom_source
from codeflux.pipeline.mutants import mutants_of_atom
from codeflux.pipeline.stubs import stub_atom

_PACKAGE = Path(atom_source_module.__file__).resolve().parents[1]
_CORPUS = ("pipeline/stubs.py", "pipeline/atom_source.py", "gitwork/diff.py")

def _functions(source: str) -> list[tuple[str, int, list[int]]]:
    """Every function of ``source``: its local name, first line and body lines."""
    found: list[tuple[str, int, list[int]]] = []

    def walk(node: ast.AST, stack: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                walk(child, [*stack, child.name])
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = [*stack, child.name]
                found.append((".".join(name), child.lineno, list(range(child.lineno, (child.end_lineno or 0) + 1))))
                walk(child, name)
            else:
                walk(child, stack)

    walk(ast.parse(source), [])
    return found


def _whole(source: str, *, local_name: str, first_line: int) -> AtomSource:
    return AtomSource(text=source, local_name=local_name, line_shift=0)


@pytest.mark.parametrize("relative", _CORPUS)
def test_the_atom_s_lines_give_the_same_mutants_and_stubs_as_the_whole_module(
        relative: str, monkeypatch: pytest.MonkeyPatch) -> None:
    source = (_PACKAGE / relative).read_text(encoding="utf-8")
    functions = _functions(source)
    assert len(functions) > 3
    fast = [(mutants_of_atom(source, local_name=name, first_line=first, lines=lines, limit=6),
             stub_atom(source, local_name=name, first_line=first)) for name, first, lines in functions]
    assert all(atom_source(source, local_name=name, first_line=first).text != source
               for name, first, _ in functions)
    monkeypatch.setattr(mutants_module, "atom_source", _whole)
    monkeypatch.setattr(stubs_module, "atom_source", _whole)
    slow = [(mutants_of_atom(source, local_name=name, first_line=first, lines=lines, limit=6),
             stub_atom(source, local_name=name, first_line=first)) for name, first, lines in functions]
    assert [mutants for mutants, _ in fast] == [mutants for mutants, _ in slow]
    assert sum(len(mutants or ()) for mutants, _ in fast) > 5
    for (_, fast_stub), (_, slow_stub) in zip(fast, slow, strict=True):
        assert fast_stub is not None and slow_stub is not None
        # a one-line body becomes an indented block: libcst may indent it differently, the code is the same
        assert ast.dump(ast.parse(fast_stub)) == ast.dump(ast.parse(slow_stub))


def test_an_indented_atom_is_parsed_under_a_header_and_its_lines_map_back() -> None:
    source = "import os\n\n\nclass Box:\n    @staticmethod\n    def size(x):\n        return x + 1\n\n\nX = 1\n"
    part = atom_source(source, local_name="Box.size", first_line=5)
    assert part.text == "if True:\n    @staticmethod\n    def size(x):\n        return x + 1\n"
    assert part.local_name == "size"
    assert part.file_line(part.text_line(7)) == 7 and part.text_line(7) == 4
    assert part.in_module(part.text) == source
    assert part.in_module("if False:\n") is None
    mutants = mutants_of_atom(source, local_name="Box.size", first_line=6, lines=[7])
    assert mutants is not None and [(mutant.line, mutant.replacement) for mutant in mutants] == [
        (7, "return None"), (7, "x - 1"), (7, "(1 + 1)")]
    assert mutants[1].source == source.replace("x + 1", "x - 1")


def test_tabs_crlf_and_comments_are_kept_and_what_ast_cannot_read_falls_back_to_the_whole_module() -> None:
    tabs = "class F:\n\tdef h(self): pass  # note\n\tX = 1\n"
    part = atom_source(tabs, local_name="F.h", first_line=2)
    assert part.text == "if True:\n\tdef h(self): pass  # note\n"
    assert stub_atom(tabs, local_name="F.h", first_line=2) == (
        "class F:\n\tdef h(self):\n\t\traise NotImplementedError('codeflux stub of F.h')\n\tX = 1\n")
    crlf = "class K:\r\n    def m(self):\r\n        return 1 < 2\r\n"
    assert atom_source(crlf, local_name="K.m", first_line=2).header == "if True:\r\n"
    mutants = mutants_of_atom(crlf, local_name="K.m", first_line=2, lines=[3])
    assert mutants is not None and mutants[1].source == crlf.replace("1 < 2", "1 <= 2")
    newer = "def f[T](x: T) -> T:\n    return x\n"  # PEP 695: this interpreter's ast cannot read it
    assert atom_source(newer, local_name="f", first_line=1).text == newer
    missing = atom_source(crlf, local_name="K.n", first_line=2)
    assert missing.text == crlf and missing.line_shift == 0 and missing.local_name == "K.n"
    twice = "if X:\n    def f():\n        return 1\nelse:\n    def f():\n        return 2\n"
    assert atom_source(twice, local_name="f", first_line=5).text == "if True:\n    def f():\n        return 2\n"
