"""Worktree glob patterns: ``*`` and ``?`` within one component, ``[…]`` classes, ``**`` for any depth.

A pattern is relative like a worktree path: no leading ``/``, no ``..`` component, no backslash, no NUL.
``*`` matches dot-files too. ``src/**/*.py`` matches ``src/a.py`` and ``src/x/y/a.py``; a pattern
without ``/`` (``*.py``) matches a name at any depth, as most agents expect.
"""

from __future__ import annotations

import re

from codeflux.domain.errors import ToolFailedError
from codeflux.domain.execution import FailureKind

__all__ = ["compile_glob"]


def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regular expression matching worktree-relative paths (``/``-separated) against ``pattern``."""
    if "\x00" in pattern or "\\" in pattern or pattern.startswith("/") or pattern.strip() == "":
        raise ToolFailedError(failure_kind=FailureKind.INVALID_PATTERN,
                              message="a glob must be a non-empty relative pattern without backslashes")
    parts = pattern.split("/")
    if any(part == ".." for part in parts):
        raise ToolFailedError(failure_kind=FailureKind.INVALID_PATTERN, message="a glob must not contain '..'")
    if len(parts) == 1 and parts[0] != "**":
        parts = ["**", *parts]
    pieces: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            pieces.append(".*" if last else "(?:[^/]+/)*")
        elif part in {"", "."}:
            continue
        else:
            pieces.append(_component(part) + ("" if last else "/"))
    try:
        return re.compile("".join(pieces) + r"\Z", re.DOTALL)
    except re.error:
        raise ToolFailedError(failure_kind=FailureKind.INVALID_PATTERN, message="the glob is malformed") from None


def _component(part: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(part):
        char = part[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            start = index + 1
            start += part[start : start + 1] in {"!", "^"}
            start += part[start : start + 1] == "]"
            end = part.find("]", start)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = part[index + 1 : end]
                negate = body[:1] in {"!", "^"}
                out.append(f"[{'^/' if negate else ''}{_class_body(body[1:] if negate else body)}]")
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _class_body(body: str) -> str:
    # Keep single '-' (ranges); escape everything else, and a second '-' in a row (Python reserves
    # '--', '&&', '~~' and '||' inside sets for future set operations).
    out: list[str] = []
    for char in body:
        if char == "-" and (not out or out[-1] != "-"):
            out.append("-")
        else:
            out.append(re.escape(char))
    return "".join(out)
