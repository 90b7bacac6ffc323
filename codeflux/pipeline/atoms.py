"""The atoms of a task's diff: every function or method it adds or changes outside test files.

:func:`atoms_of_diff` reads each added or modified Python file of assembly's file list from the worktree (a
regular file plainly inside it, never through a link) and at the base revision, and hands both to
:func:`~codeflux.domain.atoms.atoms_between`. Files it could not read or parse are listed with the reason, so
a phase B stage says what it did not look at instead of passing over it. Bounded: at most :data:`MAX_FILES`
files of at most :data:`MAX_FILE_BYTES` each; the rest are listed as not examined.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

from codeflux.domain.atoms import Atom, FileAtoms, atoms_between, module_name_of
from codeflux.gitwork.base_files import base_file_contents
from codeflux.gitwork.task_worktree import TaskWorktree
from codeflux.pipeline.base_revision import is_test_file

__all__ = ["MAX_FILES", "MAX_FILE_BYTES", "DiffAtoms", "atom_definition", "atom_definition_in", "atoms_of_diff"]

MAX_FILES: Final = 200
MAX_FILE_BYTES: Final = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffAtoms:
    """The diff's atoms, per file; ``not_examined`` maps a path to why it has no atoms listed."""

    files: tuple[FileAtoms, ...]
    not_examined: Mapping[str, str]

    @property
    def atoms(self) -> tuple[Atom, ...]:
        return tuple(atom for file in self.files for atom in file.atoms)

    def to_evidence(self) -> dict[str, object]:
        return {"atoms": [atom.to_evidence() for atom in self.atoms],
                "not_examined": dict(sorted(self.not_examined.items()))}


def _read_new(worktree: TaskWorktree, path: str) -> bytes | str:
    """The file's bytes, or why they were not read."""
    current = worktree.path
    for part in PurePosixPath(path).parts:
        current = current / part
        if current.is_symlink():
            return "a symbolic link on the way"
    if not current.is_file():
        return "not a regular file"
    if current.stat().st_size > MAX_FILE_BYTES:
        return f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"
    return current.read_bytes()


def atoms_of_diff(worktree: TaskWorktree, files: Sequence[Mapping[str, object]]) -> DiffAtoms:
    """See the module docstring; ``files`` as assembly's evidence lists them (``path``, ``kind``)."""
    candidates = sorted({str(item.get("path", "")) for item in files
                         if item.get("kind") in ("added", "modified") and str(item.get("path", "")).endswith(".py")
                         and not is_test_file(str(item.get("path", "")))})
    not_examined = {path: f"more than {MAX_FILES} changed Python files" for path in candidates[MAX_FILES:]}
    candidates = candidates[:MAX_FILES]
    src_layout = (worktree.path / "src").is_dir() and not (worktree.path / "src" / "__init__.py").exists()
    base = base_file_contents(worktree, candidates, max_bytes=MAX_FILE_BYTES)
    found: list[FileAtoms] = []
    for path in candidates:
        new = _read_new(worktree, path)
        if isinstance(new, str):
            not_examined[path] = new
            continue
        old = base.get(path)
        try:
            new_text = new.decode("utf-8")
            old_text = None if old is None else old.decode("utf-8")
        except UnicodeDecodeError:
            not_examined[path] = "not UTF-8"
            continue
        atoms = atoms_between(path, old_text, new_text, module=module_name_of(path, src_layout=src_layout))
        if atoms.problem is not None:
            not_examined[path] = atoms.problem
        found.append(atoms)
    return DiffAtoms(files=tuple(found), not_examined=not_examined)


def atom_definition(tree: ast.Module, atom: Atom) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The definition of ``atom`` in ``tree``, the syntax tree of the file it was read from: the function of its
    name that starts (decorators included) on the atom's first line, as :func:`atoms_between` reads it; None when
    there is none."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == atom.name \
                and min([node.lineno, *(d.lineno for d in node.decorator_list)]) == atom.first_line:
            return node
    return None


def atom_definition_in(source: str, atom: Atom) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """:func:`atom_definition` in ``source``; None as well when it does not parse."""
    try:
        return atom_definition(ast.parse(source), atom)
    except (SyntaxError, ValueError, RecursionError):
        return None
