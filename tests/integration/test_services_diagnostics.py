"""DiagnosticsService through its method table: the doctor's real checks on a real data directory, and real
online backups of a real SQLite database (opened again afterwards to prove they are usable)."""

from __future__ import annotations

import stat

import pytest

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.doctor import run_doctor
from codeflux.coordinator.runs.configured import check_settings_in_force
from codeflux.coordinator.tasks.leftovers import check_leftovers
from codeflux.services import diagnostics
from codeflux.services.app import CoordinatorApp
from codeflux.services.registry import Code, status_of
from codeflux.store.connection import open_connection
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.migrations import read_schema_version, supported_schema_version
from tests.fixtures.services import call, service_app

DOCTOR, BACKUP = "/codeflux.v1.DiagnosticsService/RunDoctor", "/codeflux.v1.DiagnosticsService/CreateBackup"


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, diagnostics.methods)


def test_the_doctor_reports_every_check_as_codeflux_doctor_does_without_the_data_path(
    app: CoordinatorApp, data_location: DataLocation
) -> None:
    report = call(app, DOCTOR, pb.RunDoctorRequest())

    assert isinstance(report, pb.DoctorReport)
    expected = run_doctor(data_location, extra_checks=(check_leftovers, check_settings_in_force))  # as the CLI does
    assert [c.name for c in report.checks] == [c.title for c in expected.checks]
    assert [c.status for c in report.checks] == [c.status.value for c in expected.checks]
    assert report.healthy == (not expected.blocking)
    for check in report.checks:
        assert str(data_location.directory) not in check.detail and check.detail
    by_name = {c.name: c for c in report.checks}
    assert by_name["data directory"].detail.startswith("<data directory>")
    assert by_name["database"].status == "ok"
    store = by_name["OS credential store"]  # with or without a Secret Service here: a next step unless ok
    assert store.status == "ok" or (store.status == "missing" and "— next:" in store.detail)


def test_a_backup_is_a_new_usable_snapshot_named_by_file_only_and_a_retry_does_not_write_another(
    app: CoordinatorApp, data_location: DataLocation
) -> None:
    request = pb.CreateBackupRequest(control=common_pb2.MutationControl(idempotency_key="b-1"))

    first = call(app, BACKUP, request)
    again = call(app, BACKUP, request)
    second = call(app, BACKUP, pb.CreateBackupRequest(control=common_pb2.MutationControl(idempotency_key="b-2")))

    assert isinstance(first, pb.BackupView) and isinstance(second, pb.BackupView)
    assert again == first and second.file_name != first.file_name
    assert first.file_name.startswith("codeflux-backup-") and "/" not in first.file_name
    files = sorted(p.name for p in data_location.backups.iterdir())
    assert files == sorted([first.file_name, second.file_name])
    path = data_location.backups / first.file_name
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and first.bytes == path.stat().st_size and first.pages > 0
    conn = open_connection(path, readonly=True)
    try:
        assert read_schema_version(conn) == supported_schema_version()
    finally:
        conn.close()


@pytest.mark.parametrize("key", ["", "a b", "x" * 129])
def test_a_backup_without_a_valid_key_is_an_invalid_argument_and_writes_nothing(
    app: CoordinatorApp, data_location: DataLocation, key: str
) -> None:
    with pytest.raises(Exception) as caught:
        call(app, BACKUP, pb.CreateBackupRequest(control=common_pb2.MutationControl(idempotency_key=key)))
    assert status_of(caught.value).code == Code.INVALID_ARGUMENT
    assert not data_location.backups.exists()
