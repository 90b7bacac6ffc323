"""Structural checks of the database, run on a read-only connection.

Six checks, every result row kept (an earlier system read only the first row of ``integrity_check``
and ran no foreign-key check at all):

0. the write-ahead log, read *before* any connection opens the database (opening replays it and stops at
   a damaged frame, silently dropping later commits; :mod:`codeflux.store.wal_damage`): a log whose replay
   loses committed data is copied aside into ``<data>/backups/`` and reported with the frame;
1. ``PRAGMA integrity_check`` — every row SQLite reports, up to :data:`INTEGRITY_CHECK_MAX_ERRORS`;
2. ``PRAGMA foreign_key_check`` — every violating row;
3. the migration history against the migrations this codeflux ships: each shipped version up to the
   schema version applied exactly once from the same content (sha256), no version this codeflux does
   not know, ``user_version`` equal to the newest applied version, no ``started`` row left unresolved;
4. the event journal: each session's events are exactly ``1..current_sequence``;
5. each budget's running total (``budget_totals``, kept by triggers) against its ledger summed afresh
   (:func:`~codeflux.store.money.recount_ledger_totals`): a difference would make the budget decide on wrong figures.

A pass means the file is structurally sound; it says nothing about whether its contents are right.
A check that cannot run (a damaged page makes SQLite refuse the query) becomes a finding itself and
the remaining checks still run. A file that is not a database at all is one finding, never "missing".
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

import apsw

from codeflux.domain.budget import LedgerTotals
from codeflux.domain.errors import StoreCorruptError, StoreError, StoreUnavailableError
from codeflux.domain.ids import TaskId
from codeflux.store.connection import map_sqlite_errors
from codeflux.store.database import ReadView
from codeflux.store.events import find_journal_gaps
from codeflux.store.inspection import readonly_database
from codeflux.store.location import DataLocation
from codeflux.store.migrations import Migration, load_shipped_migrations
from codeflux.store.money import ledger_totals, recount_ledger_totals
from codeflux.store.wal_damage import check_wal_before_open

__all__ = [
    "INTEGRITY_CHECK_MAX_ERRORS",
    "IntegrityCheck",
    "IntegrityFinding",
    "IntegrityReport",
    "check_database_integrity",
]

INTEGRITY_CHECK_MAX_ERRORS = 1000
"""SQLite stops ``integrity_check`` after this many problems; reaching it is reported as a finding."""

T = TypeVar("T")

_RESOLVING_RESULTS = frozenset({"succeeded", "failed", "interrupted"})


class IntegrityCheck(StrEnum):
    """Which check produced a finding."""

    FILE = "file"
    WRITE_AHEAD_LOG = "write-ahead-log"
    SCHEMA_VERSION = "schema-version"
    SQLITE_INTEGRITY = "sqlite-integrity"
    FOREIGN_KEYS = "foreign-keys"
    MIGRATION_HISTORY = "migration-history"
    EVENT_JOURNAL = "event-journal"
    BUDGET_TOTALS = "budget-totals"


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegrityFinding:
    """One problem: the check that found it and a one-line description (no row contents; a path only where a
    copy was made)."""

    check: IntegrityCheck
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegrityReport:
    """What the checks found. ``schema_version`` is None when the file could not be read at all."""

    findings: tuple[IntegrityFinding, ...]
    checks_run: tuple[IntegrityCheck, ...]
    schema_version: int | None
    supported_version: int

    @property
    def is_sound(self) -> bool:
        return not self.findings

    @property
    def is_newer_than_supported(self) -> bool:
        """Written by a newer codeflux: its newest migrations cannot be checked by this one."""
        return self.schema_version is not None and self.schema_version > self.supported_version


def check_database_integrity(
    location: DataLocation, *, shipped: tuple[Migration, ...] | None = None
) -> IntegrityReport:
    """Run every check on the database at ``location`` without changing it.

    Raises DatabaseMissingError when there is no file and StoreUnavailableError when it cannot be read
    (permissions, I/O); anything wrong *inside* the file is returned as findings.
    """
    migrations = shipped if shipped is not None else load_shipped_migrations()
    wal_findings = _check_wal(location)
    if any(f.detail.startswith(_NOT_OPENED) for f in wal_findings):
        return IntegrityReport(findings=tuple(wal_findings), checks_run=(IntegrityCheck.WRITE_AHEAD_LOG,),
                               schema_version=None, supported_version=len(migrations))
    try:
        with readonly_database(location) as conn:
            report = _check_open_database(ReadView(conn), conn, migrations)
        return IntegrityReport(findings=tuple(wal_findings) + report.findings,
                               checks_run=(IntegrityCheck.WRITE_AHEAD_LOG, *report.checks_run),
                               schema_version=report.schema_version, supported_version=report.supported_version)
    except StoreCorruptError:
        finding = IntegrityFinding(
            check=IntegrityCheck.FILE,
            detail="the file is not a readable SQLite database (its header or schema is damaged)",
        )
        return IntegrityReport(findings=(finding,), checks_run=(IntegrityCheck.FILE,), schema_version=None,
                               supported_version=len(migrations))


_NOT_OPENED = "not opened: "


def _check_wal(location: DataLocation) -> list[IntegrityFinding]:
    """The WAL's damage, found before the database is opened (its copy is made here, once)."""
    if not location.database.exists():
        return []  # readonly_database says there is no database
    try:
        damage = check_wal_before_open(location)
    except StoreUnavailableError as err:
        return [IntegrityFinding(check=IntegrityCheck.WRITE_AHEAD_LOG, detail=f"{_NOT_OPENED}{err}")]
    if damage is None:
        return []
    return [IntegrityFinding(check=IntegrityCheck.WRITE_AHEAD_LOG, detail=damage.finding)]


def _check_open_database(
    view: ReadView, conn: apsw.Connection, migrations: tuple[Migration, ...]
) -> IntegrityReport:
    findings: list[IntegrityFinding] = []
    checks: list[IntegrityCheck] = []

    def run(check: IntegrityCheck, work: Callable[[], list[IntegrityFinding]]) -> None:
        checks.append(check)
        findings.extend(_guarded(findings, check, work) or [])

    # One read transaction: every check sees the same snapshot while a writer may keep committing.
    with _read_snapshot(conn):
        schema_version = _guarded(findings, IntegrityCheck.FILE, lambda: _schema_version(view))
        run(IntegrityCheck.SQLITE_INTEGRITY, lambda: _check_sqlite_integrity(view))
        run(IntegrityCheck.FOREIGN_KEYS, lambda: _check_foreign_keys(view))
        if schema_version is not None:
            version = schema_version
            run(IntegrityCheck.MIGRATION_HISTORY, lambda: _check_migration_history(view, version, migrations))
            if version >= 1:
                run(IntegrityCheck.EVENT_JOURNAL, lambda: _check_journal(view))
            if version >= _BUDGET_TOTALS_VERSION:
                run(IntegrityCheck.BUDGET_TOTALS, lambda: _check_budget_totals(view))
    return IntegrityReport(
        findings=tuple(findings),
        checks_run=tuple(checks),
        schema_version=schema_version,
        supported_version=len(migrations),
    )


@contextlib.contextmanager
def _read_snapshot(conn: apsw.Connection) -> Iterator[None]:
    with map_sqlite_errors("begin read"):
        conn.execute("BEGIN")
    try:
        yield
    finally:
        with contextlib.suppress(apsw.Error):
            if not conn.get_autocommit():
                conn.execute("COMMIT")


def _guarded(findings: list[IntegrityFinding], check: IntegrityCheck, work: Callable[[], T]) -> T | None:
    """Run one check; a store error (a damaged page refusing a query) becomes a finding of that check."""
    try:
        return work()
    except StoreError as err:
        why = "SQLite reports the file is damaged" if isinstance(err, StoreCorruptError) else str(err)
        findings.append(IntegrityFinding(check=check, detail=f"the check could not run: {why}"))
        return None


def _schema_version(view: ReadView) -> int:
    return int(view.query_all("PRAGMA user_version")[0][0])


def _check_sqlite_integrity(view: ReadView) -> list[IntegrityFinding]:
    rows = view.query_all(f"PRAGMA integrity_check({INTEGRITY_CHECK_MAX_ERRORS})")
    if [str(row[0]) for row in rows] == ["ok"]:
        return []
    # A row can span lines ("*** in database main ***" then the problem): one finding per problem line.
    messages = [
        _one_line(line) for row in rows for line in str(row[0]).splitlines()
        if line.strip() and not line.startswith("*** in database")
    ]
    findings = [IntegrityFinding(check=IntegrityCheck.SQLITE_INTEGRITY, detail=m) for m in messages]
    if len(rows) >= INTEGRITY_CHECK_MAX_ERRORS:
        findings.append(IntegrityFinding(
            check=IntegrityCheck.SQLITE_INTEGRITY,
            detail=f"SQLite stopped after {INTEGRITY_CHECK_MAX_ERRORS} problems; there may be more",
        ))
    return findings


def _check_foreign_keys(view: ReadView) -> list[IntegrityFinding]:
    rows = view.query_all("PRAGMA foreign_key_check")
    findings = []
    for table, rowid, parent, constraint in rows:
        where = f"row {rowid}" if rowid is not None else "a row"
        findings.append(IntegrityFinding(
            check=IntegrityCheck.FOREIGN_KEYS,
            detail=_one_line(f"{where} of table {table} refers to a missing row of {parent} "
                             f"(constraint {constraint})"),
        ))
    return findings


_BUDGET_TOTALS_VERSION = 19  # migrations/000019_budget_totals.sql


def _check_budget_totals(view: ReadView) -> list[IntegrityFinding]:
    findings = []
    for row in view.query_all("SELECT task_id FROM budget_totals ORDER BY task_id"):
        task_id = TaskId.parse(str(row[0]))
        kept, counted = ledger_totals(view, task_id), recount_ledger_totals(view, task_id)
        if kept != counted:
            differ = [name for name in LedgerTotals.__dataclass_fields__
                      if getattr(kept, name) != getattr(counted, name)]
            findings.append(IntegrityFinding(check=IntegrityCheck.BUDGET_TOTALS, detail=(
                f"the running total of task {task_id.value}'s budget differs from its ledger ({', '.join(differ)})")))
    return findings


def _check_journal(view: ReadView) -> list[IntegrityFinding]:
    gaps = find_journal_gaps(view)
    return [IntegrityFinding(check=IntegrityCheck.EVENT_JOURNAL, detail=gap) for gap in gaps]


@dataclass(frozen=True, slots=True)
class _HistoryRow:
    id: int
    version: int
    sha256: str
    result: str


def _check_migration_history(
    view: ReadView, schema_version: int, migrations: tuple[Migration, ...]
) -> list[IntegrityFinding]:
    has_history = view.query_one(
        "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'migration_history'"
    ) is not None
    if not has_history:
        if schema_version == 0:
            return []  # an empty database: nothing applied, nothing to compare
        return [_history_finding(f"schema version is {schema_version} but there is no migration history")]
    rows = [
        _HistoryRow(int(r[0]), int(r[1]), str(r[2]), str(r[3]))
        for r in view.query_all("SELECT id, version, sha256, result FROM migration_history ORDER BY id")
    ]
    return _compare_history(rows, schema_version, migrations)


def _compare_history(
    rows: list[_HistoryRow], schema_version: int, migrations: tuple[Migration, ...]
) -> list[IntegrityFinding]:
    supported = len(migrations)
    shipped = {m.version: m for m in migrations}
    succeeded = [r for r in rows if r.result == "succeeded"]
    applied_count = Counter(r.version for r in succeeded)
    findings: list[IntegrityFinding] = []
    if schema_version > supported:
        findings.append(IntegrityFinding(
            check=IntegrityCheck.SCHEMA_VERSION,
            detail=f"the database has schema version {schema_version}, newer than this codeflux "
            f"(it ships migrations up to {supported:06d}); migrations above {supported:06d} cannot be "
            "checked here — use the newer codeflux that wrote it",
        ))
    for version in range(1, min(schema_version, supported) + 1):
        count = applied_count.get(version, 0)
        if count != 1:
            findings.append(_history_finding(
                f"migration {version:06d} is recorded as applied {count} times; expected exactly once"
            ))
    for row in succeeded:
        expected = shipped.get(row.version)
        if expected is not None and row.sha256 != expected.sha256:
            findings.append(_history_finding(
                f"migration {row.version:06d} was applied from different content than this codeflux ships "
                "(sha256 differs)"
            ))
    unknown = sorted({r.version for r in succeeded if r.version not in shipped})
    if unknown and schema_version <= supported:
        findings.append(_history_finding(
            "migrations this codeflux does not ship are recorded as applied: "
            + ", ".join(f"{v:06d}" for v in unknown)
        ))
    newest = max(applied_count, default=0)
    if newest != schema_version:
        findings.append(_history_finding(
            f"schema version (user_version) is {schema_version} but the newest applied migration is "
            f"{newest:06d}"
        ))
    findings += _unresolved_starts(rows)
    return findings


def _unresolved_starts(rows: list[_HistoryRow]) -> list[IntegrityFinding]:
    findings = []
    for row in rows:
        if row.result != "started":
            continue
        resolved = any(
            later.id > row.id and later.version == row.version and later.result in _RESOLVING_RESULTS
            for later in rows
        )
        if not resolved:
            findings.append(_history_finding(
                f"migration {row.version:06d} was started and never finished; the next `codeflux migrate` "
                "restores the backup taken before it"
            ))
    return findings


def _one_line(text: str) -> str:
    """Control characters (a table name in a tampered file could carry terminal escapes) as ``\\xNN``."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


def _history_finding(detail: str) -> IntegrityFinding:
    return IntegrityFinding(check=IntegrityCheck.MIGRATION_HISTORY, detail=detail)
