"""What a repository has at a commit, for the clarification check (stage 2): its paths and the words of its
Python files (:class:`~codeflux.domain.clarification.RepositoryNames`).

Read from git's objects at the commit (never the working tree, so uncommitted edits do not count), bounded:
at most :data:`MAX_FILES` paths and :data:`MAX_PYTHON_BYTES` of Python source are read; beyond that a name
is reported present (``truncated``), so a bound never turns into a question about a name that may exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pygit2

from codeflux.gitwork.checkout import map_git_errors, opened_checkout

__all__ = ["MAX_FILES", "MAX_PYTHON_BYTES", "RepositoryNamesAt", "repository_names_at_head"]

MAX_FILES: Final = 50_000
MAX_PYTHON_BYTES: Final = 32 * 1024 * 1024
_WORD: Final = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryNamesAt:
    """The paths (files and the folders holding them) and Python words of one commit."""

    commit: str
    paths: frozenset[str]
    words: frozenset[str]
    truncated: bool = False
    folders: frozenset[str] = field(default_factory=frozenset)

    def has_path(self, path: str) -> bool:
        cleaned = path.strip("/")
        return self.truncated or cleaned in self.paths or cleaned in self.folders

    def has_identifier(self, name: str) -> bool:
        return self.truncated or name in self.words


def _walk(repository: pygit2.Repository, tree: pygit2.Tree) -> tuple[list[tuple[str, pygit2.Oid]], bool]:
    files: list[tuple[str, pygit2.Oid]] = []
    stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while stack:
        prefix, current = stack.pop()
        for entry in current:
            name = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                stack.append((f"{name}/", repository[entry.id]))  # type: ignore[arg-type]
            elif entry.type_str == "blob":
                files.append((name, entry.id))
                if len(files) >= MAX_FILES:
                    return files, True
    return files, False


def repository_names_at_head(root: Path) -> RepositoryNamesAt:
    """The names the checkout at ``root`` has at its HEAD commit."""
    with opened_checkout(root) as (repository, _), map_git_errors("read the base tree"):
        commit = repository.head.peel(pygit2.Commit)
        files, truncated = _walk(repository, commit.tree)
        folders = {path.rsplit("/", 1)[0] for path, _ in files if "/" in path}
        for folder in list(folders):
            parts = folder.split("/")
            folders.update("/".join(parts[:index]) for index in range(1, len(parts)))
        words: set[str] = set()
        read = 0
        for path, oid in files:
            if not path.endswith((".py", ".pyi")):
                continue
            blob = repository[oid]
            data = blob.data if isinstance(blob, pygit2.Blob) else b""
            read += len(data)
            if read > MAX_PYTHON_BYTES:
                truncated = True
                break
            words.update(word.decode("ascii") for word in _WORD.findall(data))
        return RepositoryNamesAt(commit=str(commit.id), paths=frozenset(path for path, _ in files),
                                 words=frozenset(words), truncated=truncated, folders=frozenset(folders))
