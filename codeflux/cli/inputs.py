"""What a person hands the CLI — arguments, files, standard input — checked before anything is created.

Every input is text, and codeflux reads text as UTF-8. A value that is not (bytes a shell passed through
from a file name or a paste; Python keeps them as lone surrogates) is refused with exit 2 naming the input,
instead of failing later — after a task was created — with an internal error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from codeflux.domain.errors import UsageError

__all__ = ["read_text_file", "refuse_undecodable_arguments", "undecodable"]


def undecodable(text: str) -> bool:
    """True when ``text`` holds bytes that were not UTF-8 (decoded by Python as lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def refuse_undecodable_arguments(arguments: Sequence[str]) -> None:
    """Refuse the first argument that is not valid UTF-8, naming the option it belongs to (or its position)."""
    for index, word in enumerate(arguments):
        if not undecodable(word):
            continue
        if word.startswith("--") and "=" in word:
            named = f"the value of {word.split('=', 1)[0]}"
        elif index > 0 and arguments[index - 1].startswith("--") and "=" not in arguments[index - 1]:
            named = f"the value of {arguments[index - 1]}"
        else:
            named = f"argument {index + 1}"
        if undecodable(named):  # the option's own name was not UTF-8 either
            named = f"argument {index + 1}"
        raise UsageError(f"{named} is not valid UTF-8; codeflux reads every argument as UTF-8 text")


def read_text_file(path: str, *, what: str, max_bytes: int) -> str:
    """The UTF-8 text of the file at ``path`` (``what`` names it in errors: ``--requirement-file``)."""
    file = Path(path)
    try:
        if not file.is_file():
            raise UsageError(f"{what} {path}: no such file" if not file.exists() else f"{what} {path}: not a file")
        if file.stat().st_size > max_bytes:
            raise UsageError(f"{what} {path}: larger than {max_bytes:,} bytes")
        data = file.read_bytes()
    except OSError as err:
        raise UsageError(f"{what} {path}: cannot be read ({err.strerror or type(err).__name__})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"{what} {path}: not valid UTF-8 (byte {err.start + 1} of the file)") from None
