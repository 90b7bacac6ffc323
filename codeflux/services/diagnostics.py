"""``DiagnosticsService``: the doctor's checks and a backup, from the browser.

* ``RunDoctor`` — :func:`codeflux.coordinator.doctor.run_doctor` on the coordinator's data directory, as
  ``codeflux doctor`` prints it: each check's title, its status (``ok``, ``missing``, ``degraded``,
  ``failed`` or ``unknown`` — unknown is never shown as ok) and its summary with the next step; ``healthy``
  when no check blocks work. Every check is bounded (``CHECK_TIMEOUT_S`` each). The data directory's path
  is shown as ``<data directory>``.
* ``CreateBackup`` — a consistent online snapshot
  (:func:`codeflux.coordinator.maintenance.write_backup_into_data_directory`, from a read-only connection, in
  one step) into ``<data>/backups/codeflux-backup-<UTC time>.sqlite3`` (0600,
  never overwriting); the reply names the file, never its path. A retry with the same idempotency key
  returns the first backup instead of writing another.
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.doctor import DEFAULT_PORT, CheckResult, CheckStatus, run_doctor
from codeflux.coordinator.maintenance import BACKUP_PREFIX, write_backup_into_data_directory
from codeflux.coordinator.runs.configured import check_settings_in_force
from codeflux.coordinator.tasks.leftovers import check_leftovers
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import MutationLedger, mutation_of
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.store.location import DataLocation

__all__ = ["BACKUP_PREFIX", "create_backup", "doctor_report", "methods"]

_SERVICE: Final = "DiagnosticsService"
_DATA_DIRECTORY: Final = "<data directory>"


def _check_view(check: CheckResult, directory: str) -> pb.DoctorCheckView:
    detail = check.summary
    if check.remediation and check.status is not CheckStatus.OK:
        detail += f" — next: {check.remediation}"
    return pb.DoctorCheckView(name=check.title.replace(directory, _DATA_DIRECTORY), status=check.status.value,
                              detail=detail.replace(directory, _DATA_DIRECTORY))


def doctor_report(app: CoordinatorApp) -> pb.DoctorReport:
    """The doctor's checks on the coordinator's data directory (see the module docstring)."""
    port = app.port if app.port is not None and 0 < app.port < 65536 else DEFAULT_PORT
    report = run_doctor(app.location, port=port, extra_checks=(check_leftovers, check_settings_in_force))
    directory = str(app.location.directory)
    return pb.DoctorReport(checks=[_check_view(check, directory) for check in report.checks],
                           healthy=not report.blocking)


def create_backup(location: DataLocation) -> pb.BackupView:
    """Write a new snapshot into the data directory's backups folder; returns its file name and size."""
    report = write_backup_into_data_directory(location)
    return pb.BackupView(file_name=report.path.name, bytes=report.bytes, pages=report.pages)


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def run(ctx: CallContext, request: pb.RunDoctorRequest) -> pb.DoctorReport:
        return doctor_report(app)

    def backup(ctx: CallContext, request: pb.CreateBackupRequest) -> pb.BackupView:
        mutation = mutation_of(ctx, "CreateBackup", request.control)
        return ledger.run(mutation, request, pb.BackupView, lambda: create_backup(app.location))

    return [
        UnaryMethod(name=method_name(_SERVICE, "RunDoctor"), request_type=pb.RunDoctorRequest,
                    response_type=pb.DoctorReport, handler=run),
        UnaryMethod(name=method_name(_SERVICE, "CreateBackup"), request_type=pb.CreateBackupRequest,
                    response_type=pb.BackupView, handler=backup, mutating=True),
    ]
