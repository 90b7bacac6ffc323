"""`codeflux version`: what this codeflux is built from.

It answers in a few milliseconds: library versions come from the installed packages' metadata
(:mod:`importlib.metadata`), never from importing the libraries (pygit2 alone takes longer than Python's
own start), and the schema version from the shipped migration files. ``--libraries`` also loads apsw and
pygit2 and names the SQLite and libgit2 they bring (what ``codeflux doctor`` checks), at their import's cost.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import sys
from dataclasses import dataclass
from importlib import metadata

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


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildFacts:
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


def _commit_from_package_metadata() -> str | None:
    """The commit pip recorded when codeflux was installed from a git URL (PEP 610 ``direct_url.json``)."""
    try:
        text = metadata.distribution("codeflux").read_text("direct_url.json")
        commit = json.loads(text or "{}").get("vcs_info", {}).get("commit_id")
    except (metadata.PackageNotFoundError, OSError, ValueError, AttributeError):
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


def _library_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


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
    ctx.say(f"python: {platform.python_version()} ({platform.python_implementation()})")
    for library in LIBRARIES:
        ctx.say(f"{library}: {_library_version(library)}")
    if args.libraries:
        for line in _loaded_library_lines():
            ctx.say(line)
    return 0
