"""Requirement sentences, the deterministic ambiguity check (stage 2) and trace coverage (stage 4).

**Sentences.** :func:`requirement_sentences` numbers the requirement's sentences from 1, the
``<<<ACCEPTANCE`` blocks left out. The split is purely textual and deterministic: paragraphs and list items
(a line starting ``-``, ``*``, ``+`` or ``1.``/``1)``) start a sentence; inside one, a sentence ends at
``.``, ``!`` or ``?`` followed by whitespace and an upper-case letter, digit, quote, bracket or backtick —
except after a handful of abbreviations (``e.g.``, ``i.e.``, ``etc.``, ``vs.``). The planner is shown the
numbered sentences and its trace refers to these numbers.

**The ambiguity check** (:func:`find_ambiguities`) is *only* three deterministic checks — it never judges
what a sentence means (no pronoun or vagueness heuristics):

1. a path or identifier the requirement names explicitly — a backticked ```name```, or an unquoted token
   that looks like a path (it has a known file extension, or a ``/`` and a first component the repository
   has) — that the repository does not have at the base revision. A path a plan step says it will create or
   change (or a folder it writes into) is not absent. Identifiers are looked up as words in the base tree's
   Python files (and as file or folder names); Python's keywords and builtins always exist;
2. two acceptance examples running the same command (argv) with different expected output;
3. the planner's own questions (added by the planner, not here).

**Trace coverage** (:func:`trace_coverage`): a plan's trace maps each step to acceptance example numbers
(in the order :func:`codeflux.domain.acceptance.acceptance_of` returns them, from 1) and requirement
sentence numbers; coverage says which examples and sentences no step names. It checks completeness only,
never whether a step really serves what it names.
"""

from __future__ import annotations

import builtins
import keyword
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Protocol

from codeflux.domain.acceptance import AcceptanceExample

__all__ = [
    "MAX_NAMES_CHECKED",
    "MAX_SENTENCES",
    "Ambiguity",
    "ClarificationPolicy",
    "NamedReference",
    "QuestionOrigin",
    "RepositoryNames",
    "TraceCoverage",
    "find_ambiguities",
    "named_references",
    "requirement_sentences",
    "trace_coverage",
]

MAX_SENTENCES: Final = 200
MAX_NAMES_CHECKED: Final = 40
_MAX_SENTENCE_CHARS: Final = 1000
_MAX_NAME_CHARS: Final = 200

_BLOCK: Final = re.compile(r"<<<ACCEPTANCE[ \t]*\r?\n.*?\r?\n[ \t]*>>>", re.DOTALL)
_ITEM: Final = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_END: Final = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])")
_ABBREVIATIONS: Final = ("e.g.", "i.e.", "etc.", "vs.", "cf.")
_BACKTICKED: Final = re.compile(r"`([^`\n]{1,200})`")
_TOKEN: Final = re.compile(r"[A-Za-z0-9_./-]+")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
_EXTENSIONS: Final = frozenset({
    "py", "pyi", "pyx", "txt", "md", "rst", "toml", "cfg", "ini", "json", "yaml", "yml", "js", "mjs", "ts",
    "tsx", "jsx", "html", "css", "sh", "csv", "sql", "c", "h", "cc", "cpp", "hpp", "go", "rs", "java", "rb",
    "lock", "xml", "proto", "in", "env", "conf",
})


class ClarificationPolicy(StrEnum):
    """What happens to open questions: ``ask`` the person before the plan can be approved (default), or
    ``assume`` — each question's stated reading becomes an assumption of the plan and approval is allowed."""

    ASK = "ask"
    ASSUME = "assume"


class QuestionOrigin(StrEnum):
    """Which check raised a question."""

    ABSENT_NAME = "absent-name"
    CONTRADICTING_EXAMPLES = "contradicting-examples"
    PLANNER = "planner"


class RepositoryNames(Protocol):
    """What the repository has at the base revision (the check's only view of it)."""

    def has_path(self, path: str) -> bool:
        """A file, or a folder holding files, at ``path`` (repository-relative)."""
        ...

    def has_identifier(self, name: str) -> bool:
        """``name`` occurs as a word in one of the Python files."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class NamedReference:
    """A name the requirement states explicitly: a ``path`` or an ``identifier``."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Ambiguity:
    """A finding of the check: the question to ask, and the reading assumed if it is not asked."""

    origin: QuestionOrigin
    question: str
    assumption: str


# ─── sentences ─────────────────────────────────────────────────────────────────────────────────────


def _without_blocks(requirement: str) -> str:
    return _BLOCK.sub("\n\n", requirement)


def _paragraphs(text: str) -> list[str]:
    """Runs of lines; a blank line or a list item starts a new run."""
    runs: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        if not line.strip() or _ITEM.match(line):
            if current:
                runs.append(current)
            current = [line.strip()] if line.strip() else []
            continue
        current.append(line.strip())
    if current:
        runs.append(current)
    return [" ".join(run) for run in runs]


def _split(paragraph: str) -> list[str]:
    pieces: list[str] = []
    for piece in _END.split(paragraph):
        if pieces and pieces[-1].lower().endswith(_ABBREVIATIONS):
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return pieces


def requirement_sentences(requirement: str) -> tuple[str, ...]:
    """The requirement's sentences in order (numbered from 1 by position), ACCEPTANCE blocks excluded.

    Each sentence is stripped and holds at least one letter or digit; at most :data:`MAX_SENTENCES`, each cut
    to 1000 characters. Never raises for any text.
    """
    sentences: list[str] = []
    for paragraph in _paragraphs(_without_blocks(requirement)):
        for sentence in _split(paragraph):
            text = " ".join(sentence.split())
            if any(character.isalnum() for character in text):
                sentences.append(text[:_MAX_SENTENCE_CHARS])
            if len(sentences) >= MAX_SENTENCES:
                return tuple(sentences)
    return tuple(sentences)


# ─── named references ──────────────────────────────────────────────────────────────────────────────


def _extension(token: str) -> str | None:
    last = token.rsplit("/", 1)[-1]
    stem, dot, extension = last.rpartition(".")
    if not dot or not stem.strip("."):
        return None
    return extension.lower() if extension.lower() in _EXTENSIONS else None


def _as_path(token: str) -> str | None:
    """``token`` as a repository-relative path when it looks like one, else None."""
    cleaned = token.split("::", 1)[0].strip().rstrip(".,;:)")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if not cleaned or "://" in token or cleaned.startswith(("/", "~", "-")) or ".." in cleaned.split("/"):
        return None
    if _extension(cleaned) is not None:
        return cleaned.rstrip("/")
    if "/" in cleaned.strip("/"):
        return cleaned.rstrip("/")
    return None


def named_references(requirement: str) -> tuple[NamedReference, ...]:
    """Every path or identifier ``requirement`` names explicitly (see the module docstring), each once, in
    order of first appearance, at most :data:`MAX_NAMES_CHECKED`; ACCEPTANCE blocks are left out."""
    text = _without_blocks(requirement)
    found: dict[tuple[str, str], None] = {}
    for match in _BACKTICKED.finditer(text):
        inner = match[1].strip()
        path = _as_path(inner) if " " not in inner else None
        if path is not None:
            found.setdefault(("path", path[:_MAX_NAME_CHARS]))
        elif _IDENTIFIER.fullmatch(inner):
            name = inner.removesuffix("()").rsplit(".", 1)[-1]
            if not keyword.iskeyword(name) and not hasattr(builtins, name):  # Python's own names always exist
                found.setdefault(("identifier", name))
    for token in _TOKEN.findall(_BACKTICKED.sub(" ", text)):
        path = _as_path(token)
        if path is not None and ("/" in path or _extension(path) is not None):
            found.setdefault(("slash-path" if "/" in path and _extension(path) is None else "path",
                              path[:_MAX_NAME_CHARS]))
    references = [NamedReference(kind=kind, name=name) for kind, name in found]
    return tuple(references[:MAX_NAMES_CHECKED])


# ─── the ambiguity check ───────────────────────────────────────────────────────────────────────────


def _planned(path: str, planned_paths: Iterable[str]) -> bool:
    """A step creates or changes ``path`` itself, or files inside it (a folder)."""
    return any(path == planned or planned.startswith(path.rstrip("/") + "/") for planned in planned_paths)


def _absent(reference: NamedReference, names: RepositoryNames, planned_paths: Sequence[str]) -> bool:
    if reference.kind == "identifier":  # a word of the Python files, or a file or folder of that name
        return not (names.has_identifier(reference.name) or names.has_path(reference.name)
                    or _planned(reference.name, planned_paths))
    if _planned(reference.name, planned_paths) or names.has_path(reference.name):
        return False
    if reference.kind == "slash-path":  # "and/or": only a path when its first folder exists
        return names.has_path(reference.name.split("/", 1)[0])
    return True


def _absent_name_question(reference: NamedReference) -> Ambiguity:
    if reference.kind == "identifier":
        return Ambiguity(
            origin=QuestionOrigin.ABSENT_NAME,
            question=(f"The requirement names `{reference.name}`, which no Python file in the repository mentions "
                      "at the base revision. Is it new (to be created by this change), or does it mean something "
                      "that exists under another name?"),
            assumption=f"`{reference.name}` is new: this change creates it.")
    return Ambiguity(
        origin=QuestionOrigin.ABSENT_NAME,
        question=(f"The requirement names `{reference.name}`, which the repository does not have at the base "
                  "revision and no plan step creates. Should the change create it, or is another path meant?"),
        assumption=f"`{reference.name}` is to be created by this change.")


def _contradictions(examples: Sequence[AcceptanceExample]) -> list[Ambiguity]:
    found: list[Ambiguity] = []
    first_of: dict[tuple[str, ...], int] = {}
    for number, example in enumerate(examples, start=1):
        if not example.argv:
            continue
        earlier = first_of.setdefault(example.argv, number)
        if earlier != number and examples[earlier - 1].expected != example.expected:
            command = shlex.join(example.argv)
            found.append(Ambiguity(
                origin=QuestionOrigin.CONTRADICTING_EXAMPLES,
                question=(f"Acceptance examples {earlier} and {number} run the same command `{command}` but "
                          "expect different output. Which output is right?"),
                assumption=f"Example {earlier}'s expected output is the right one; example {number} is a mistake."))
    return found


def find_ambiguities(requirement: str, examples: Sequence[AcceptanceExample], *, planned_paths: Sequence[str],
                     names: RepositoryNames) -> tuple[tuple[NamedReference, ...], tuple[Ambiguity, ...]]:
    """The names checked and the findings of checks 1 and 2 (see the module docstring), deterministic for the
    same inputs; ``examples`` numbered from 1 in the order given."""
    references = named_references(requirement)
    findings = [_absent_name_question(r) for r in references if _absent(r, names, planned_paths)]
    findings += _contradictions(examples)
    checked = tuple(NamedReference(kind="path" if r.kind == "slash-path" else r.kind, name=r.name)
                    for r in references)
    return checked, tuple(findings)


# ─── trace coverage ────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceCoverage:
    """Which acceptance examples and requirement sentences (numbers from 1) no step of the trace names, and
    which numbers the trace names that do not exist."""

    uncovered_examples: tuple[int, ...]
    uncovered_sentences: tuple[int, ...]
    unknown_examples: tuple[int, ...]
    unknown_sentences: tuple[int, ...]


def trace_coverage(trace: Sequence[tuple[Sequence[int], Sequence[int]]], *, examples: int,
                   sentences: int) -> TraceCoverage:
    """Completeness of ``trace`` (per step: example numbers, sentence numbers) against ``examples`` examples
    and ``sentences`` sentences."""
    named_examples = {number for step_examples, _ in trace for number in step_examples}
    named_sentences = {number for _, step_sentences in trace for number in step_sentences}
    return TraceCoverage(
        uncovered_examples=tuple(n for n in range(1, examples + 1) if n not in named_examples),
        uncovered_sentences=tuple(n for n in range(1, sentences + 1) if n not in named_sentences),
        unknown_examples=tuple(sorted(n for n in named_examples if not 1 <= n <= examples)),
        unknown_sentences=tuple(sorted(n for n in named_sentences if not 1 <= n <= sentences)),
    )
