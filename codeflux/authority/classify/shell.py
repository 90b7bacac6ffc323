"""The shell-string lexer: a ``sh -c`` string split into simple commands, and compound detection.

Pure text work with no capabilities in it: :func:`split_shell` lexes a script into
:class:`ShellCommand` words and redirection targets and says whether it was compound (several commands,
redirections or substitutions); :func:`substitutions` finds the scripts inside ``$( … )`` and
backticks. The words shells treat specially (reserved words, ``NAME=value`` assignments) are named here
too. What the commands need is decided in :mod:`~codeflux.authority.classify.commands`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Final

_OPERATOR_CHARS: Final = ";&|<>()\n`"
_OPERATOR_PIECE: Final = re.compile(
    r";;&|;;|;&|&&|\|\||\|&|<<<|<<-|<<|<>|<&|>&|&>>|&>|>>|>\||[;&|()\n`<>]"
)
_REDIRECTIONS: Final = frozenset({"<<<", "<<-", "<<", "<>", "<&", ">&", "&>>", "&>", ">>", ">|", "<", ">"})
DYNAMIC_MARK: Final = "`"


@dataclass(slots=True)
class ShellCommand:
    words: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    redirections: list[str] = field(default_factory=list)  # the operator before each target (`>`, `<<<` …)


HERE_DOCUMENTS: Final = frozenset({"<<<", "<<", "<<-"})
"""Redirections whose target is text (a here-string or a here-document's delimiter), not a file."""


def _lex_shell(script: str) -> list[str] | None:
    lexer = shlex.shlex(script.replace("\\\n", ""), posix=True, punctuation_chars=_OPERATOR_CHARS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # shlex would end a comment mid-word and swallow the newline after it
    try:
        return list(lexer)
    except ValueError:
        return None


def split_shell(script: str) -> tuple[list[ShellCommand], bool] | None:
    """The simple commands of ``script`` and whether it was compound; None when it cannot be parsed.

    Every operator separates commands (a quoted lone ``;`` does too: over-splitting only adds needs).
    A redirection's target stays with its command. A backtick in command position marks a program
    name decided at run time.
    """
    tokens = _lex_shell(script)
    if tokens is None:
        return None
    splitter = _ShellSplitter()
    for token in tokens:
        if any(char not in _OPERATOR_CHARS for char in token):
            splitter.word(token)
        elif not splitter.operator(token):
            return None
    return splitter.finish()


@dataclass(slots=True)
class _ShellSplitter:
    """The state of :func:`split_shell` while it walks the tokens."""

    commands: list[ShellCommand] = field(default_factory=list)
    current: ShellCommand = field(default_factory=ShellCommand)
    pending_redirection: bool = False
    pending_operator: str = ""
    compound: bool = False
    open_parentheses: int = 0  # may go negative: `case` patterns close what they never opened
    backticks: int = 0

    def word(self, token: str) -> None:
        if self.pending_redirection:
            self.current.targets.append(token)
            self.current.redirections.append(self.pending_operator)
        else:
            self.current.words.append(token)
        self.pending_redirection = False

    def operator(self, token: str) -> bool:
        """Take one operator token; False when it makes the script unparseable."""
        pieces = _OPERATOR_PIECE.findall(token)  # covers the token: every operator character is a piece
        self.compound = True
        for piece in _merge_process_substitutions(pieces):
            if piece in _REDIRECTIONS:
                if self.pending_redirection:
                    return False
                self.pending_redirection, self.pending_operator = True, piece
                continue
            if self.pending_redirection and piece != "(":  # `< <(…)` is fine, `> ;` is not
                return False
            if piece == "`" and not self.current.words:
                self.current.words.append(DYNAMIC_MARK)
            self.open_parentheses += {"(": 1, ")": -1}.get(piece, 0)
            self.backticks += piece == "`"
            self.pending_redirection = False
            self._flush()
        return True

    def finish(self) -> tuple[list[ShellCommand], bool] | None:
        if self.pending_redirection or self.open_parentheses > 0 or self.backticks % 2:
            return None
        self._flush()
        return self.commands, self.compound

    def _flush(self) -> None:
        if self.current.words or self.current.targets:
            self.commands.append(self.current)
        self.current = ShellCommand()


def _merge_process_substitutions(pieces: list[str]) -> list[str]:
    """``<(`` and ``>(`` open a process substitution: a new command, not a redirection."""
    merged: list[str] = []
    for piece in pieces:
        if piece == "(" and merged and merged[-1] in {"<", ">"}:
            merged[-1] = "("
        else:
            merged.append(piece)
    return merged


def substitutions(word: str) -> list[str] | None:
    """Scripts inside ``$( … )`` and backticks of one word (quoted or not); None if unbalanced."""
    found: list[str] = []
    index = 0
    while index < len(word):
        if word.startswith("$(", index):
            depth, end = 0, index + 1
            while end < len(word):
                depth += {"(": 1, ")": -1}.get(word[end], 0)
                if depth == 0:
                    break
                end += 1
            if depth != 0:
                return None
            found.append(word[index + 2 : end])
            index = end + 1
        elif word[index] == "`":
            end = word.find("`", index + 1)
            if end < 0:
                return None
            found.append(word[index + 1 : end])
            index = end + 1
        else:
            index += 1
    return found


RESERVED_PREFIXES: Final = frozenset({"!", "{", "}", "(", "then", "do", "else", "elif", "if", "while", "until"})
NOT_A_COMMAND: Final = frozenset({"for", "select", "case", "function", "in", "esac", "done", "fi", "}"})
ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=", flags=re.DOTALL)
