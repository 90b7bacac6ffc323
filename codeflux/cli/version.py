"""`codeflux version`: what this codeflux is built from."""

from __future__ import annotations

import argparse
import importlib.metadata
import platform

import apsw
import pygit2

import codeflux
from codeflux.cli.context import CliContext
from codeflux.coordinator.maintenance import shipped_schema_version

NAME = "version"
SUMMARY = "print the codeflux version, schema version, and the versions of Python, SQLite, apsw and libgit2"


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    del args
    ctx.say(f"codeflux: {codeflux.__version__}")
    ctx.say(f"schema-version: {shipped_schema_version()}")
    ctx.say(f"python: {platform.python_version()} ({platform.python_implementation()})")
    ctx.say(f"sqlite: {apsw.sqlite_lib_version()}")
    ctx.say(f"apsw: {apsw.apsw_version()}")
    ctx.say(f"pygit2: {importlib.metadata.version('pygit2')} (libgit2 {pygit2.LIBGIT2_VERSION})")
    return 0
