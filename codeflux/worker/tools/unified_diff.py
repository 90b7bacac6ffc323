"""Reading a unified diff (plain or git-style) into per-file sections and hunks, without touching any file.

What is understood, as ``git apply`` understands it:

- git sections (``diff --git a/x b/x`` with ``new file mode``, ``deleted file mode``, ``old mode``/``new
  mode``, ``rename from``/``to``, ``copy from``/``to``, ``similarity index``, ``index``) and plain
  ``--- a/x`` / ``+++ b/x`` sections; ``/dev/null`` on one side creates or deletes the file; ``a/``/``b/``
  prefixes are dropped and C-quoted names (``"caf\\303\\251"``) unquoted;
- hunks ``@@ -l,n +l,n @@`` with context (`` ``, or an empty line), removed (``-``) and added (``+``)
  lines and ``\\ No newline at end of file``; text before the first section and between sections
  (a mail header, a ``-- `` signature) is skipped.

Hunk line counts are trusted only when they fit: a count that runs into the next section or stops
short of lines that still belong to the hunk is ignored and the hunk is read by its line prefixes
instead, like ``git apply --recount`` (models often get the counts wrong). A ``---``/``+++`` pair
followed by ``@@`` always starts a new section then. A header without numbers (``@@ @@``) is accepted
too: that hunk is placed by its content alone.

Refused (``patch-refused``): binary patches and modes other than a regular file (``120000`` symbolic
link, ``160000`` submodule). Anything malformed is ``patch-does-not-apply`` with the patch line number.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from codeflux.domain.errors import ToolFailedError
from codeflux.domain.execution import FailureKind

__all__ = ["FilePatch", "Hunk", "parse_unified_diff"]

_HUNK_HEADER: Final = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BARE_HUNK_HEADER: Final = re.compile(rb"^@@(?: @@)?(?: .*)?$")
_REGULAR_MODES: Final = frozenset({0o100644, 0o100755, 0o100664})
_SPECIAL_MODES: Final = frozenset({0o120000, 0o160000})
_ESCAPES: Final = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12, ord("r"): 13,
                   ord('"'): 34, ord("\\"): 92}  # fmt: skip
_GIT_EXTENDED: Final = (
    b"old mode ", b"new mode ", b"deleted file mode ", b"new file mode ", b"rename from ", b"rename to ",
    b"copy from ", b"copy to ", b"similarity index ", b"dissimilarity index ", b"index ", b"rename old ",
    b"rename new ",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Hunk:
    """One hunk: the lines it expects (``preimage``) and what replaces them (``postimage``).

    Lines carry their ``\\n`` (none on a line marked ``\\ No newline at end of file``). ``old_start`` and
    ``new_start`` are the header's line numbers, None for a header without numbers; ``leading`` and
    ``trailing`` count the context lines before the first and after the last change.

    A recounted hunk that ends in empty lines reads them as blank context lines (as git does);
    ``without_trailing_blanks`` is the same hunk without them, to try when they were only a separator.
    """

    line: int
    old_start: int | None
    new_start: int | None
    preimage: tuple[bytes, ...]
    postimage: tuple[bytes, ...]
    leading: int
    trailing: int
    without_trailing_blanks: Hunk | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FilePatch:
    """What one section of the diff does to one file.

    ``old_path`` None: the file is created; ``new_path`` None: it is deleted; both set and different:
    renamed (or copied, with ``copy``). ``new_mode`` is the git mode the file gets (``0o100755`` makes
    it executable), None to keep its mode. ``git`` tells a git section from a plain one.
    """

    line: int
    old_path: str | None
    new_path: str | None
    copy: bool = False
    new_mode: int | None = None
    git: bool = False
    hunks: tuple[Hunk, ...] = ()

    def paths(self) -> set[str]:
        return {path for path in (self.old_path, self.new_path) if path is not None}


def parse_unified_diff(data: bytes) -> list[FilePatch]:
    """Every file section of ``data``, in order; an empty list when it holds none."""
    return _Reader(data).sections()


def _failure(line: int, message: str, *, kind: FailureKind = FailureKind.PATCH_DOES_NOT_APPLY) -> ToolFailedError:
    return ToolFailedError(failure_kind=kind, message=f"patch line {line}: {message}")


@dataclass(slots=True)
class _GitHeader:
    line: int
    names: tuple[str | None, str | None]
    old_candidates: list[str] = field(default_factory=list)
    new_candidates: list[str] = field(default_factory=list)
    creates: bool = False
    deletes: bool = False
    copy: bool = False
    new_mode: int | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        self.lines = lines
        self.index = 0

    def sections(self) -> list[FilePatch]:
        found: list[FilePatch] = []
        while self.index < len(self.lines):
            line = self.lines[self.index]
            if line.startswith(b"diff --git "):
                found.append(self._git_section())
            elif _is_file_header(self.lines, self.index):
                found.append(self._plain_section())
            elif line.startswith(b"GIT binary patch") or (line.startswith(b"Binary files ") and
                                                          line.rstrip(b"\r").endswith(b" differ")):
                raise _binary(self.index + 1)
            else:
                self.index += 1  # text around the diff: a message, a signature, a blank line
        return found

    # ----------------------------------------------------------------------------------- sections

    def _plain_section(self) -> FilePatch:
        number = self.index + 1
        old = _side_name(self.lines[self.index][4:], number)
        new = _side_name(self.lines[self.index + 1][4:], number + 1)
        self.index += 2
        if old is None and new is None:
            raise _failure(number, "both sides are /dev/null")
        if old is not None and new is not None and old != new:
            raise _failure(number, "'---' and '+++' name different files; to rename, use a git header "
                                   "('diff --git', 'rename from', 'rename to')")
        return FilePatch(line=number, old_path=old, new_path=new, hunks=self._hunks())

    def _git_section(self) -> FilePatch:
        header = _GitHeader(line=self.index + 1, names=_git_header_names(self.lines[self.index][11:], self.index + 1))
        self.index += 1
        while self.index < len(self.lines) and self.lines[self.index].startswith(_GIT_EXTENDED):
            _read_extended(header, self.lines[self.index].rstrip(b"\r"), self.index + 1)
            self.index += 1
        hunks: tuple[Hunk, ...] = ()
        line = self.lines[self.index] if self.index < len(self.lines) else b""
        if line.startswith(b"GIT binary patch") or line.startswith(b"Binary files "):
            raise _binary(self.index + 1)
        if _is_file_header(self.lines, self.index):
            minus = _side_name(self.lines[self.index][4:], self.index + 1)
            plus = _side_name(self.lines[self.index + 1][4:], self.index + 2)
            header.creates = header.creates or minus is None
            header.deletes = header.deletes or plus is None
            header.old_candidates += [minus] if minus is not None else []
            header.new_candidates += [plus] if plus is not None else []
            self.index += 2
            hunks = self._hunks()
        return _git_file_patch(header, hunks)

    def _hunks(self) -> tuple[Hunk, ...]:
        hunks: list[Hunk] = []
        while self.index < len(self.lines) and self.lines[self.index].startswith(b"@@"):
            hunks.append(self._hunk())
        if not hunks:
            raise _failure(self.index + 1, "a file section without a hunk ('@@ -l,n +l,n @@')")
        return tuple(hunks)

    def _hunk(self) -> Hunk:
        number = self.index + 1
        header = self.lines[self.index].rstrip(b"\r")
        match = _HUNK_HEADER.match(header)
        if match is None and not _BARE_HUNK_HEADER.match(header):
            raise _failure(number, "a hunk header must read '@@ -l,n +l,n @@'")
        start = self.index + 1
        counted = None
        if match is not None:
            counts = (int(match.group(2) or 1), int(match.group(4) or 1))
            counted = _counted_body(self.lines, start, counts)
        body, self.index = counted if counted is not None else _recounted_body(self.lines, start)
        trimmed = list(body)
        while trimmed and trimmed[-1] == b"":
            trimmed.pop()
        if not trimmed:
            raise _failure(number, "the hunk has no lines")
        old_start, new_start = (int(match.group(1)), int(match.group(3))) if match else (None, None)
        hunk = _hunk_of(body, line=number, old_start=old_start, new_start=new_start)
        if len(trimmed) == len(body):
            return hunk
        return dataclasses.replace(hunk, without_trailing_blanks=_hunk_of(trimmed, line=number, old_start=old_start,
                                                                          new_start=new_start))


# --------------------------------------------------------------------------------------- hunk bodies


def _is_body(line: bytes) -> bool:
    return line == b"" or line[:1] in (b" ", b"-", b"+", b"\\")


def _is_file_header(lines: Sequence[bytes], index: int) -> bool:
    """``--- x`` then ``+++ y`` then ``@@``: a section starts here (never a removed and an added line)."""
    return (index + 2 < len(lines) and lines[index].startswith(b"--- ") and lines[index + 1].startswith(b"+++ ")
            and lines[index + 2].startswith(b"@@"))


def _is_signature(lines: Sequence[bytes], index: int) -> bool:
    """The ``-- `` line ``git format-patch`` puts before its version footer."""
    return lines[index] == b"-- " and (index + 1 >= len(lines) or not _is_body(lines[index + 1]))


def _counted_body(lines: Sequence[bytes], start: int, counts: tuple[int, int]) -> tuple[list[bytes], int] | None:
    """The body as the header's counts say, or None when the counts do not fit the lines."""
    old, new = counts
    index = start
    body: list[bytes] = []
    while old > 0 or new > 0:
        if index >= len(lines) or not _is_body(lines[index]) or _is_file_header(lines, index):
            return None
        line = lines[index]
        kind = line[:1]
        if kind in (b"", b" ", b"-"):
            old -= 1
        if kind in (b"", b" ", b"+"):
            new -= 1
        body.append(line)
        index += 1
    if old < 0 or new < 0:
        return None
    if index < len(lines) and lines[index].startswith(b"\\"):
        body.append(lines[index])
        index += 1
    follows = lines[index] if index < len(lines) else b""
    if follows[:1] in (b" ", b"-", b"+") and not _is_file_header(lines, index) and not _is_signature(lines, index):
        return None  # the hunk goes on past its count
    return body, index


def _recounted_body(lines: Sequence[bytes], start: int) -> tuple[list[bytes], int]:
    """The body by line prefixes alone, up to the next hunk, section, signature or other text."""
    index = start
    while (index < len(lines) and _is_body(lines[index]) and not _is_file_header(lines, index)
           and not _is_signature(lines, index)):
        index += 1
    return list(lines[start:index]), index


def _hunk_of(body: Sequence[bytes], *, line: int, old_start: int | None, new_start: int | None) -> Hunk:
    preimage: list[bytes] = []
    postimage: list[bytes] = []
    kinds: list[bytes] = []
    for text in body:
        if text.startswith(b"\\"):
            _drop_newline(kinds[-1] if kinds else b"", preimage, postimage, line)
            continue
        kind = text[:1] or b" "
        content = text[1:] + b"\n"
        if kind != b"+":
            preimage.append(content)
        if kind != b"-":
            postimage.append(content)
        kinds.append(kind)
    changes = [position for position, kind in enumerate(kinds) if kind != b" "]
    leading = changes[0] if changes else len(kinds)
    trailing = len(kinds) - 1 - changes[-1] if changes else len(kinds)
    return Hunk(line=line, old_start=old_start, new_start=new_start, preimage=tuple(preimage),
                postimage=tuple(postimage), leading=leading, trailing=trailing)


def _drop_newline(kind: bytes, preimage: list[bytes], postimage: list[bytes], line: int) -> None:
    """``\\ No newline at end of file``: the line before it ends without ``\\n`` on its side(s)."""
    if kind == b"":
        raise _failure(line, "'\\ No newline at end of file' follows no line")
    if kind != b"+":
        preimage[-1] = preimage[-1].removesuffix(b"\n")
    if kind != b"-":
        postimage[-1] = postimage[-1].removesuffix(b"\n")


# ------------------------------------------------------------------------------------------ git headers


def _read_extended(header: _GitHeader, line: bytes, number: int) -> None:
    word, _, value = line.partition(b" ")
    if line.startswith((b"rename from ", b"copy from ")):
        header.old_candidates.append(_plain_name(line.split(b" ", 2)[2], number))
        header.copy = header.copy or word == b"copy"
    elif line.startswith((b"rename to ", b"copy to ")):
        header.new_candidates.append(_plain_name(line.split(b" ", 2)[2], number))
    elif line.startswith(b"new file mode "):
        header.creates = True
        header.new_mode = _mode(line.rsplit(b" ", 1)[1], number)
    elif line.startswith(b"new mode "):
        header.new_mode = _mode(line.rsplit(b" ", 1)[1], number)
    elif line.startswith(b"deleted file mode "):
        header.deletes = True
        _mode(line.rsplit(b" ", 1)[1], number)
    elif line.startswith(b"old mode "):
        _mode(line.rsplit(b" ", 1)[1], number)
    elif line.startswith(b"index ") and value.count(b" ") == 1:
        _mode(value.rsplit(b" ", 1)[1], number)


def _git_file_patch(header: _GitHeader, hunks: tuple[Hunk, ...]) -> FilePatch:
    number = header.line
    old_side, new_side = header.names
    old = _agreed([*header.old_candidates, *([old_side] if old_side and not header.creates else [])], number)
    new = _agreed([*header.new_candidates, *([new_side] if new_side and not header.deletes else [])], number)
    if header.creates and header.deletes:
        raise _failure(number, "a section cannot both create and delete its file")
    if header.creates:
        if header.old_candidates:
            raise _failure(number, "a new file cannot also have an old name")
        old = None
    if header.deletes:
        if header.new_candidates:
            raise _failure(number, "a deleted file cannot also have a new name")
        new = None
    if old is None and new is None:
        raise _failure(number, "the section does not say which file it changes")
    changes_something = hunks or header.creates or header.deletes or old != new or header.new_mode is not None
    if not changes_something:
        raise _failure(number, "the section changes nothing")
    return FilePatch(line=number, old_path=old, new_path=new, copy=header.copy, new_mode=header.new_mode, git=True,
                     hunks=hunks)


def _agreed(candidates: Sequence[str], number: int) -> str | None:
    if not candidates:
        return None
    if any(candidate != candidates[0] for candidate in candidates):
        raise _failure(number, "the section names its file inconsistently")
    return candidates[0]


def _git_header_names(rest: bytes, number: int) -> tuple[str | None, str | None]:
    """The old and new names of ``diff --git <old> <new>``; (None, None) when they cannot be told apart."""
    rest = rest.rstrip(b"\r")
    if rest.startswith(b'"'):
        old_raw, remainder = _unquote(rest, number)
        if not remainder.startswith(b" "):
            raise _failure(number, "a malformed 'diff --git' line")
        new_text = remainder[1:]
        new_raw = _unquote(new_text, number)[0] if new_text.startswith(b'"') else new_text
        return _strip_prefix(_decoded(old_raw, number)), _strip_prefix(_decoded(new_raw, number))
    if b' "' in rest:
        old_text, _, new_text = rest.partition(b' "')
        new_raw = _unquote(b'"' + new_text, number)[0]
        return _strip_prefix(_decoded(old_text, number)), _strip_prefix(_decoded(new_raw, number))
    # Unquoted names may hold spaces: the split is where both sides name the same file.
    for position in (index for index, byte in enumerate(rest) if byte == 0x20):
        old_name = _strip_prefix(_decoded(rest[:position], number))
        if old_name == _strip_prefix(_decoded(rest[position + 1 :], number)):
            return old_name, old_name
    return None, None


def _side_name(text: bytes, number: int) -> str | None:
    """The name on a ``---``/``+++`` line: None for /dev/null, else unquoted, without a/ or b/."""
    text = text.rstrip(b"\r")
    raw = _unquote(text, number)[0] if text.startswith(b'"') else text.split(b"\t", 1)[0]
    if raw == b"/dev/null":
        return None
    return _strip_prefix(_decoded(raw, number))


def _plain_name(text: bytes, number: int) -> str:
    text = text.rstrip(b"\r")
    return _decoded(_unquote(text, number)[0] if text.startswith(b'"') else text, number)


def _strip_prefix(name: str) -> str:
    return name[2:] if name[:2] in ("a/", "b/") else name


def _decoded(raw: bytes, number: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _failure(number, "a file name is not UTF-8", kind=FailureKind.PATCH_REFUSED) from None


def _unquote(text: bytes, number: int) -> tuple[bytes, bytes]:
    """A C-quoted name at the start of ``text`` (as git writes unusual names), and what follows it."""
    out = bytearray()
    index = 1
    while index < len(text):
        byte = text[index]
        if byte == 0x22:  # the closing quote
            return bytes(out), text[index + 1 :]
        if byte != 0x5C:
            out.append(byte)
            index += 1
            continue
        escape = text[index + 1 : index + 4]
        if escape[:1] and escape[0] in _ESCAPES:
            out.append(_ESCAPES[escape[0]])
            index += 2
        elif len(escape) == 3 and all(0x30 <= digit <= 0x37 for digit in escape):
            out.append(int(escape, 8) & 0xFF)
            index += 4
        else:
            raise _failure(number, "a quoted file name has an unknown escape")
    raise _failure(number, "a quoted file name is not closed")


def _mode(text: bytes, number: int) -> int:
    try:
        mode = int(text.rstrip(b"\r"), 8)
    except ValueError:
        raise _failure(number, "a file mode is not an octal number") from None
    if mode in _SPECIAL_MODES:
        raise _failure(number, "the patch would create or change a symbolic link or a submodule",
                       kind=FailureKind.PATCH_REFUSED)
    if mode not in _REGULAR_MODES:
        raise _failure(number, f"unsupported file mode {mode:o}", kind=FailureKind.PATCH_REFUSED)
    return mode


def _binary(line: int) -> ToolFailedError:
    return _failure(line, "binary patches are not applied; change text files only, or write the file whole",
                    kind=FailureKind.PATCH_REFUSED)
