"""`codeflux version`: what this codeflux is built from.

It answers in a few milliseconds: library versions come from the installed packages' metadata, never from
importing the libraries (pygit2 alone takes longer than Python's own start), and the schema version from the
shipped migration files' names. The metadata is read the way :mod:`importlib.metadata` finds it — the first
``NAME-VERSION.dist-info`` folder on ``sys.path``, its ``METADATA`` ``Version:`` header and its PEP 610
``direct_url.json`` — without importing that module, whose e-mail header parser alone costs more than the rest
of the command (docs/benchmarks.md, "bench cli"). ``--libraries`` also loads apsw and
pygit2 and names the SQLite and libgit2 they bring (what ``codeflux doctor`` checks), at their import's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import sys
from typing import NamedTuple

import codeflux
from codeflux.cli.context import CliContext
from codeflux.cli.main import version_line
from codeflux.coordinator.schema_version import shipped_schema_version

__all__ = ["BUILD_INFO_FILE", "BuildFacts", "build_facts", "configure", "run"]

NAME = "version"
SUMMARY = ("print the codeflux version and build (commit, frozen or not), the schema version, and the versions "
           "of Python, apsw and pygit2")

BUILD_INFO_FILE = "_build_info.json"
"""A file a build may write next to ``codeflux/__init__.py``: ``{"commit": "<40 hex digits>"}``."""

LIBRARIES = ("apsw", "pygit2")
UNKNOWN = "unknown"


class BuildFacts(NamedTuple):
    """What this codeflux was built from, each fact ``unknown`` when nothing records it."""

    version: str
    commit: str
    commit_source: str | None
    frozen: bool


def _commit_from_build_file(package_folder: pathlib.Path) -> str | None:
    try:
        text = (package_folder / BUILD_INFO_FILE).read_text(encoding="utf-8")
        commit = json.loads(text).get("commit")
    except (OSError, ValueError, AttributeError):
        return None
    return commit if _is_commit(commit) else None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def installed_metadata_folder(name: str) -> pathlib.Path | None:
    """The ``.dist-info`` folder of the installed distribution ``name``: the first on ``sys.path``, as
    :func:`importlib.metadata.distribution` finds it; None when it is not installed that way."""
    wanted = _normalized(name)
    for entry in sys.path:
        try:
            children = os.listdir(entry or ".")
        except OSError:  # a missing folder, a zip file on the path
            continue
        for child in children:
            project, _, _ = child.removesuffix(".dist-info").rpartition("-")
            if child.endswith(".dist-info") and _normalized(project) == wanted:
                return pathlib.Path(entry or ".", child)
    return None


def installed_version(name: str) -> str | None:
    """The ``Version:`` header of the installed distribution's ``METADATA``, or None."""
    folder = installed_metadata_folder(name)
    if folder is None:
        return None
    try:
        with (folder / "METADATA").open(encoding="utf-8") as headers:
            for line in headers:
                if not line.strip():
                    return None  # the headers end at the first blank line; the description follows
                if line.lower().startswith("version:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _commit_from_package_metadata() -> str | None:
    """The commit pip recorded when codeflux was installed from a git URL (PEP 610 ``direct_url.json``)."""
    folder = installed_metadata_folder("codeflux")
    if folder is None:
        return None
    try:
        commit = json.loads((folder / "direct_url.json").read_text(encoding="utf-8")).get("vcs_info", {}).get(
            "commit_id")
    except (OSError, ValueError, AttributeError):
        return None
    return commit if _is_commit(commit) else None


def _is_commit(value: object) -> bool:
    return isinstance(value, str) and len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value)


def build_facts(*, package_folder: pathlib.Path | None = None) -> BuildFacts:
    """The version, the commit (:data:`BUILD_INFO_FILE` in the package's folder, written at build; else the
    install's package metadata; else unknown — never guessed from a checkout nearby) and whether this is a
    frozen single-file build (``sys.frozen``, which PyInstaller sets)."""
    folder = package_folder or pathlib.Path(codeflux.__file__).parent
    commit, source = _commit_from_build_file(folder), "build"
    if commit is None:
        commit, source = _commit_from_package_metadata(), "package metadata"
    return BuildFacts(version=codeflux.__version__, commit=commit or UNKNOWN,
                      commit_source=source if commit else None, frozen=bool(getattr(sys, "frozen", False)))


def _python_version() -> str:
    """``3.11.7 (CPython)``, as :mod:`platform` words it, read from :mod:`sys` (importing platform costs a
    millisecond)."""
    implementation = {"cpython": "CPython", "pypy": "PyPy"}.get(sys.implementation.name, sys.implementation.name)
    return f"{sys.version.split()[0]} ({implementation})"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--libraries", action="store_true",
                        help="also load apsw and pygit2 and print the SQLite and libgit2 versions in use (slower)")


def _loaded_library_lines() -> list[str]:
    import apsw  # noqa: PLC0415 (only on request: importing them is most of a slow start)
    import pygit2  # noqa: PLC0415

    return [f"sqlite: {apsw.sqlite_lib_version()} (loaded by apsw {apsw.apsw_version()})",
            f"libgit2: {pygit2.LIBGIT2_VERSION} (loaded by pygit2)"]


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    facts = build_facts()
    ctx.say(version_line())  # what `codeflux --version` prints
    commit = facts.commit if facts.commit_source is None else f"{facts.commit} (from the {facts.commit_source})"
    ctx.say(f"commit: {commit}")
    ctx.say(f"frozen: {'yes (a single-file build)' if facts.frozen else 'no'}")
    ctx.say(f"schema-version: {shipped_schema_version()}")
    ctx.say(f"python: {_python_version()}")
    for library in LIBRARIES:
        ctx.say(f"{library}: {installed_version(library) or 'not installed'}")
    if args.libraries:
        for line in _loaded_library_lines():
            ctx.say(line)
    return 0
