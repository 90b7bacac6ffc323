"""``InstructionService``: a repository's instruction files and a person's approvals of them.

* ``ListInstructionFiles`` — the configured paths found in the repository's checkout (read-only, nothing
  registered): each with its text (or the problem: a link out of the repository, too large, not UTF-8),
  sha256, approval state and approval history.
* ``ApproveInstructionFile`` — the person approves exactly (repository, path, sha256); refused unless the
  checkout's file holds that content now. Registers the repository the first time. In the browser it needs
  the file card's ``approve_confirmation`` (:mod:`codeflux.server.confirmations`).
* ``RevokeInstructionFile`` — revokes the approval in force of (repository, path, sha256); in the browser it
  needs that approval's ``revoke_confirmation``.
* ``SetInstructionPaths`` — replaces the configured paths (an empty list restores the defaults).

See :mod:`codeflux.coordinator.tasks.instruction_files` for the rules.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.tasks.instruction_files import (
    InstructionApprovalRow,
    ListedInstructionFile,
    approve_instruction_file,
    list_instruction_files,
    revoke_instruction_file,
    set_instruction_paths,
)
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import MutationLedger, mutation_of
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.views import task_service
from codeflux.services.workspace import inspect_path

__all__ = ["instruction_files_view", "methods"]

_SERVICE: Final = "InstructionService"


def _iso(at_us: int | None) -> str:
    if at_us is None:
        return ""
    moment = dt.datetime.fromtimestamp(at_us / 1_000_000, tz=dt.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _approval(row: InstructionApprovalRow) -> pb.InstructionApprovalView:
    return pb.InstructionApprovalView(sha256=row.sha256, approved_by=row.approved_by,
                                      approved_at=_iso(row.approved_at_us), revoked_by=row.revoked_by or "",
                                      revoked_at=_iso(row.revoked_at_us))


def _file(listed: ListedInstructionFile) -> pb.InstructionFileView:
    file = listed.file
    return pb.InstructionFileView(
        path=file.path, sha256=file.sha256 or "", size=file.size or 0, text=file.text or "",
        problem="" if file.problem is None else file.problem.value, state=listed.state.value,
        approvals=[_approval(row) for row in listed.history])


def instruction_files_view(app: CoordinatorApp, raw_path: str, *, outcome: str = "") -> pb.InstructionFilesView:
    """The instruction files of the repository at ``raw_path`` (see the module docstring)."""
    listed = list_instruction_files(app.db, inspect_path(raw_path))
    return pb.InstructionFilesView(
        root=str(listed.root), repository_id="" if listed.repository_id is None else listed.repository_id.value,
        paths=list(listed.paths), files=[_file(item) for item in listed.files], outcome=outcome)


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def list_files(ctx: CallContext, request: pb.ListInstructionFilesRequest) -> pb.InstructionFilesView:
        return instruction_files_view(app, request.repository_path)

    def approve(ctx: CallContext, request: pb.InstructionFileDecisionRequest) -> pb.InstructionFilesView:
        mutation = mutation_of(ctx, "ApproveInstructionFile", request.control)

        def work() -> pb.InstructionFilesView:
            snapshot = inspect_path(request.repository_path)
            approved = approve_instruction_file(app.db, snapshot, path=request.path, sha256=request.sha256,
                                                register=task_service(app).register_repository)
            row, learned = approved.row, approved.learned
            memory = (f"; memory holds {len(learned.entries)} of its statements as conventions"
                      if learned.entries else "")
            skipped = "".join(f"; not learned: {line}" for line in learned.skipped)
            return instruction_files_view(app, str(snapshot.root),
                                          outcome=f"approved {row.path} at sha256 {row.sha256}{memory}{skipped}")

        return ledger.run(mutation, request, pb.InstructionFilesView, work)

    def revoke(ctx: CallContext, request: pb.InstructionFileDecisionRequest) -> pb.InstructionFilesView:
        mutation = mutation_of(ctx, "RevokeInstructionFile", request.control)

        def work() -> pb.InstructionFilesView:
            snapshot = inspect_path(request.repository_path)
            row = revoke_instruction_file(app.db, snapshot, path=request.path, sha256=request.sha256)
            outcome = (f"revoked the approval of {row.path} at sha256 {row.sha256}" if row is not None else
                       "nothing to revoke: no approval of that path at that sha256 is in force")
            return instruction_files_view(app, str(snapshot.root), outcome=outcome)

        return ledger.run(mutation, request, pb.InstructionFilesView, work)

    def set_paths(ctx: CallContext, request: pb.SetInstructionPathsRequest) -> pb.InstructionFilesView:
        mutation = mutation_of(ctx, "SetInstructionPaths", request.control)

        def work() -> pb.InstructionFilesView:
            chosen = set_instruction_paths(app.db, list(request.paths))
            outcome = "instruction files: " + ", ".join(chosen)
            if request.repository_path:
                return instruction_files_view(app, request.repository_path, outcome=outcome)
            return pb.InstructionFilesView(paths=list(chosen), outcome=outcome)

        return ledger.run(mutation, request, pb.InstructionFilesView, work)

    return [
        UnaryMethod(name=method_name(_SERVICE, "ListInstructionFiles"), request_type=pb.ListInstructionFilesRequest,
                    response_type=pb.InstructionFilesView, handler=list_files),
        UnaryMethod(name=method_name(_SERVICE, "ApproveInstructionFile"),
                    request_type=pb.InstructionFileDecisionRequest, response_type=pb.InstructionFilesView,
                    handler=approve, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "RevokeInstructionFile"),
                    request_type=pb.InstructionFileDecisionRequest, response_type=pb.InstructionFilesView,
                    handler=revoke, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "SetInstructionPaths"), request_type=pb.SetInstructionPathsRequest,
                    response_type=pb.InstructionFilesView, handler=set_paths, mutating=True),
    ]
