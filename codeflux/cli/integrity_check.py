"""`codeflux integrity-check`: is the database file structurally sound?

Runs every row of SQLite's integrity check, the foreign-key check, the migration history against the
migrations this codeflux ships, and the event journal's contiguity, on a read-only connection. Prints
each finding and exits 1 if there is any. A pass means structurally sound, not that the contents are
correct. A database written by a newer codeflux is still checked by SQLite; its newer migrations are
reported as a finding this codeflux cannot verify, and if that is the only finding the command exits 3
("needs a newer codeflux") like every other command refusing a newer database.
"""

from __future__ import annotations

import argparse

from codeflux.cli.context import CliContext
from codeflux.coordinator.maintenance import IntegrityCheck, check_integrity
from codeflux.domain.errors import DatabaseNewerError, IntegrityCheckFailedError

NAME = "integrity-check"
SUMMARY = ("check the database: every integrity_check row, foreign keys, migration history, journal "
           "contiguity (read-only)")


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    del args
    report = check_integrity(ctx.location())
    if report.schema_version is not None:
        ctx.say(f"integrity-check: schema version {report.schema_version} "
                f"(this codeflux ships {report.supported_version})")
    ctx.say("integrity-check: ran " + ", ".join(check.value for check in report.checks_run))
    for finding in report.findings:
        ctx.say(f"integrity-check: [{finding.check.value}] {finding.detail}")
    if report.findings:
        newer_only = all(f.check is IntegrityCheck.SCHEMA_VERSION for f in report.findings)
        if newer_only and report.schema_version is not None:
            # SQLite found nothing wrong; what is left is a refusal by state, as everywhere else (exit 3).
            raise DatabaseNewerError(database_version=report.schema_version,
                                     supported_version=report.supported_version)
        raise IntegrityCheckFailedError(finding_count=len(report.findings))
    if report.schema_version is not None and report.schema_version < report.supported_version:
        ctx.say("integrity-check: the schema is older than this codeflux; `codeflux migrate` brings it up to "
                "date (a backup is taken first)")
    ctx.say("integrity-check: ok — structurally sound; this does not mean the contents are correct")
    return 0
