"""The sample repository: a tiny Python package with one failing test, to try codeflux offline.

Its files are package data (``codeflux/cli/demo_files/repository.json``); ``script.json`` next to it is
the scripted provider's (not a model) script that fixes it. :func:`create_sample_repository` writes the
files into an empty directory, runs ``git init`` and commits; :func:`create_demo_repository` does that
under the data directory (``<data>/demo/calc-<n>``, a fresh directory every time) for the first-run
button and ``codeflux start --demo``. ``codeflux demo init PATH`` calls the former.

:func:`demo_requirement` reads a sample's ``TASK.md`` back (read-only) so the UI can offer it as the
requirement: only for a repository that codeflux made as a sample, i.e. a directory ``calc-<n>`` directly
in ``<data>/demo/`` (resolved, so a symlink elsewhere does not count) holding a regular ``TASK.md``.

git runs with hooks off, no commit signing and no prompts, so nothing from the user's git configuration
runs while the sample is made.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from importlib import resources
from pathlib import Path
from typing import Final

from codeflux.domain.errors import GitOperationFailedError, OperationFailedError, OutputExistsError, UsageError
from codeflux.store.location import DataLocation

__all__ = [
    "DEMO_COMMIT_MESSAGE",
    "DEMO_TEST_COMMAND",
    "MAX_DEMO_REQUIREMENT_BYTES",
    "create_demo_repository",
    "create_sample_repository",
    "demo_file_text",
    "demo_requirement",
    "sample_files",
]

DEMO_TEST_COMMAND: Final = "python3 -m pytest -p no:cacheprovider --junitxml=$TMPDIR/codeflux-checks/junit.xml"
DEMO_COMMIT_MESSAGE: Final = "calc demo: add() is wrong for negative numbers"
_DEMO_DIRECTORY: Final = "demo"
_DEMO_PREFIX: Final = "calc-"
_MAX_DEMOS: Final = 10_000
_DEMO_NAME: Final = re.compile(r"calc-[0-9]{1,5}")
_REQUIREMENT_FILE: Final = "TASK.md"
MAX_DEMO_REQUIREMENT_BYTES: Final = 16 * 1024
_GIT_CONFIG: Final = ("-c", "user.name=codeflux demo", "-c", "user.email=demo@codeflux.invalid",
                      "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false")


def demo_file_text(name: str) -> str:
    """The text of one shipped demo file (``repository.json`` or ``script.json``)."""
    if name not in ("repository.json", "script.json"):
        raise UsageError(f"no shipped demo file named {name!r}")
    return resources.files("codeflux").joinpath("cli", "demo_files", name).read_text("utf-8")


def sample_files() -> dict[str, str]:
    """The sample repository's files: relative path → text."""
    raw = json.loads(demo_file_text("repository.json"))
    files = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise UsageError("the shipped demo repository is malformed; reinstall codeflux")
    return {str(path): content for path, content in files.items()}


def _git(root: Path, *args: str) -> None:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    done = subprocess.run(["git", *_GIT_CONFIG, "-C", str(root), *args], capture_output=True, text=True,
                          check=False, timeout=60, env=env)
    if done.returncode != 0:
        detail = done.stderr.strip().replace(str(root), "<the demo repository>")[:300]
        raise GitOperationFailedError(operation=f"{args[0]} the demo repository", problem="failed",
                                      detail=detail or f"git exited with status {done.returncode}")


def create_sample_repository(root: Path) -> Path:
    """Write the sample into ``root`` (missing or empty), ``git init`` it on ``main`` and commit; returns ``root``.

    Refuses with :class:`OutputExistsError` a ``root`` that is a file or a non-empty directory.
    """
    root = Path(os.path.abspath(root))
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise OutputExistsError(what=f"{root} (not an empty directory)")
    root.mkdir(parents=True, exist_ok=True)
    for relative, content in sample_files().items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--no-verify", "-m", DEMO_COMMIT_MESSAGE)
    return root


def create_demo_repository(location: DataLocation) -> Path:
    """A new sample repository at ``<data>/demo/calc-<n>`` (the first free ``n``); returns its path."""
    parent = location.directory / _DEMO_DIRECTORY
    try:
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as err:
        raise OperationFailedError(f"the demo folder in the data directory cannot be created ({err.strerror})") from err
    taken = {p.name for p in parent.iterdir()} if parent.is_dir() else set()
    for number in range(1, _MAX_DEMOS):
        name = f"{_DEMO_PREFIX}{number}"
        if name in taken:
            continue
        root = parent / name
        try:
            root.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made by another request in between
        return create_sample_repository(root)
    raise OperationFailedError("the data directory's demo folder is full; delete old demo repositories from it")


def demo_requirement(location: DataLocation, root: Path, *, limit: int = MAX_DEMO_REQUIREMENT_BYTES) -> str:
    """The sample repository's ``TASK.md`` text (at most ``limit`` bytes, cut on a character boundary),
    or ``""`` when ``root`` is not a sample codeflux made under ``location`` (see the module docstring) or
    its ``TASK.md`` is missing, not a regular file, not UTF-8 text or holds a NUL. Reads only."""
    try:
        demo_root = Path(os.path.realpath(location.directory / _DEMO_DIRECTORY))
        resolved = Path(os.path.realpath(root))
        if resolved.parent != demo_root or _DEMO_NAME.fullmatch(resolved.name) is None:
            return ""
        descriptor = os.open(resolved / _REQUIREMENT_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return ""
            raw = handle.read(limit + 1)
    except OSError:
        return ""
    # A cut may split the last character (at most 3 bytes of it): drop those, never anything else.
    for drop in range(4 if len(raw) > limit else 1):
        try:
            text = raw[:limit - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return "" if "\x00" in text else text
    return ""
