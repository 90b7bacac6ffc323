"""`codeflux migrate`: create the database or bring it to this codeflux's schema, backing it up first."""

from __future__ import annotations

import argparse

from codeflux.cli.context import CliContext
from codeflux.coordinator.maintenance import migrate_data_directory

NAME = "migrate"
SUMMARY = "create the database, or migrate it to this codeflux's schema (an online backup is taken first)"
RECORDS_APP_LOG = True


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    del args
    location = ctx.location()
    created = not location.database.exists()
    report = migrate_data_directory(location)
    if created:
        ctx.say(f"migrate: created a new database at schema version {report.to_version}")
    elif not report.applied:
        ctx.say(f"migrate: already at schema version {report.to_version}; nothing to do")
    else:
        ctx.say(f"migrate: schema version {report.from_version} -> {report.to_version}")
        if report.backup_path is not None:
            ctx.say(f"migrate: backup taken first: {report.backup_path}")
    return 0
