"""``WorkspaceService``: the first-run overview, read-only repository discovery, and the demo repository.

* ``GetOverview`` — version, the provider the coordinator uses (``scripted demo — not an AI model`` for
  the scripted one), each provider's credential status read as ``codeflux provider list`` reads it
  (whether a key is stored — never the key — and whether SQLite holds its reference; within
  :data:`CREDENTIAL_STATUS_TIMEOUT_S`, else "unknown"), the repositories codeflux knows (root and id;
  :rpc:`InspectRepository` reads one), the system session id and whether this is a first run (no
  repository and no task yet). Only the data directory's *name* is returned, never its path.
* ``InspectRepository`` — :func:`codeflux.gitwork.repository.open_repository` on an absolute path:
  HEAD, branch, operations in progress, uncommitted changes and their hash; nothing is written. A path
  that cannot be used is FAILED_PRECONDITION naming the problem (not a repository, bare, no commits, …)
  without echoing the path. For a sample repository codeflux made (a ``calc-<n>`` directory directly in
  ``<data>/demo/`` with a regular ``TASK.md``; :func:`codeflux.coordinator.demo.demo_requirement`),
  ``suggested_requirement`` is its ``TASK.md`` (at most 16 KiB), which the composer offers.
* ``CreateDemoRepository`` — the sample repository under ``<data>/demo/calc-<n>``
  (:func:`codeflux.coordinator.demo.create_demo_repository`), registered as a known repository; then the
  coordinator switches to the scripted provider. A retry with the same idempotency key returns the same
  repository (:class:`~codeflux.services.mutations.MutationLedger`). Its ``suggested_requirement`` is the
  sample's ``TASK.md``, so a new user completes the demo without typing the requirement.
"""

from __future__ import annotations

import concurrent.futures
import os
from pathlib import Path
from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator import demo
from codeflux.coordinator.journal import SYSTEM_SESSION_ID
from codeflux.coordinator.maintenance import stored_provider_key_names
from codeflux.coordinator.provider_keys import key_origins
from codeflux.coordinator.tasks.records import has_any_task, known_repositories, known_repository
from codeflux.coordinator.tasks.service import TaskService
from codeflux.credentials import StoredProviderKeys, stored_provider_keys
from codeflux.credentials.held import HeldKeys, KeySource
from codeflux.domain.errors import InvalidValueError, RepositoryNotUsableError
from codeflux.domain.providers import ProviderName
from codeflux.gitwork.repository import RepositorySnapshot, open_repository
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import MutationLedger, mutation_of
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.store.database import Database

__all__ = [
    "CREDENTIAL_STATUS_TIMEOUT_S",
    "create_demo_repository",
    "inspect_path",
    "methods",
    "provider_statuses",
    "repository_view",
]

CREDENTIAL_STATUS_TIMEOUT_S: Final = 8.0
MAX_LISTED_REPOSITORIES: Final = 200
_MAX_PATH: Final = 4096
_SERVICE: Final = "WorkspaceService"


def provider_statuses(db: Database | None, *, timeout_s: float = CREDENTIAL_STATUS_TIMEOUT_S,
                      keys: HeldKeys | None = None) -> list[pb.ProviderStatus]:
    """Each provider's credential status as ``codeflux provider list`` shows it (never a key), bounded in time, with
    where the key a call sends comes from (:func:`~codeflux.coordinator.provider_keys.key_origins`: an environment
    variable wins over the OS credential store). ``db`` None: there is no database yet, so no reference is recorded."""
    references = frozenset() if db is None else stored_provider_key_names(db)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="codeflux-credential-status")
    try:
        found = pool.submit(lambda: stored_provider_keys(timeout_s=min(5.0, timeout_s))).result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        found = StoredProviderKeys(stored=frozenset(),
                                  unknown_because=f"the OS credential store did not answer within {timeout_s:.0f} s")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    origins = key_origins(found, keys=keys)
    statuses = []
    for provider in ProviderName:
        stored = provider in found.stored
        if not found.known:
            detail = f"unknown: {found.unknown_because}"
        else:
            detail = "a key is stored (not contacted)" if stored else "no key stored"
        if origins[provider].source is KeySource.ENVIRONMENT:  # what calls use comes first, the store after it
            detail = ("a key is given in the environment (not contacted, never stored); "
                      f"the OS credential store: {detail}")
        statuses.append(pb.ProviderStatus(name=provider.value, credential_stored=stored,
                                          reference_recorded=provider.value in references, detail=detail,
                                          key_source=origins[provider].text))
    return statuses


def repository_view(snapshot: RepositorySnapshot, repository_id: str = "", *,
                    suggested_requirement: str = "") -> pb.RepositoryView:
    """The protobuf view of a repository as :func:`open_repository` found it."""
    return pb.RepositoryView(
        root=str(snapshot.root), head=snapshot.head, branch=snapshot.branch or "", detached=snapshot.is_detached,
        operations_in_progress=[str(op) for op in snapshot.operations],
        changes=[pb.ChangedPath(path=c.path, status=str(c.status), content_sha256=c.content_sha256 or "")
                 for c in snapshot.changes],
        dirty_hash=snapshot.dirty_hash if snapshot.is_dirty else "", dirty=snapshot.is_dirty,
        repository_id=repository_id, suggested_requirement=suggested_requirement)


def _requested_path(raw: str) -> Path:
    if not raw.strip():
        raise InvalidValueError(kind="repository path", reason="path is required")
    if "\x00" in raw or len(raw) > _MAX_PATH:
        raise InvalidValueError(kind="repository path", reason=f"must be at most {_MAX_PATH} characters without NUL")
    path = Path(os.path.expanduser(raw.strip()))
    if not path.is_absolute():
        raise InvalidValueError(kind="repository path", reason="give an absolute path (or one starting with ~)")
    return path


def inspect_path(raw: str) -> RepositorySnapshot:
    """Open the repository at ``raw`` read-only; refusals never echo the path (FAILED_PRECONDITION)."""
    path = _requested_path(raw)
    try:
        return open_repository(path)
    except RepositoryNotUsableError as err:
        raise RepositoryNotUsableError(path="that path", problem=err.problem, detail=err.detail) from err


def _known_id(db: Database, snapshot: RepositorySnapshot) -> str:
    row = known_repository(db, snapshot.identity)
    return "" if row is None else row.repository_id.value


def _overview(app: CoordinatorApp) -> pb.Overview:
    known = known_repositories(app.db, limit=MAX_LISTED_REPOSITORIES)
    has_task = has_any_task(app.db)
    return pb.Overview(
        version=app.version, provider_label=app.models.label, scripted=app.models.scripted,
        providers=provider_statuses(app.db),
        repositories=[pb.RepositoryView(root=str(row.root), repository_id=row.repository_id.value) for row in known],
        data_directory_name=app.location.directory.name, system_session_id=SYSTEM_SESSION_ID,
        first_run=not known and not has_task)


def _demo(app: CoordinatorApp) -> pb.RepositoryView:
    snapshot = open_repository(demo.create_demo_repository(app.location))
    row = TaskService(app.db, worktrees_root=app.location.worktrees).register_repository(snapshot)
    app.models.use_scripted_demo()
    return repository_view(snapshot, row.repository_id.value,
                           suggested_requirement=demo.demo_requirement(app.location, snapshot.root))


def create_demo_repository(app: CoordinatorApp) -> Path:
    """A new sample repository under the data directory, registered; the coordinator now uses the scripted
    provider. Returns the repository's root (``codeflux start --demo`` prints it)."""
    return Path(_demo(app).root)


def _create_demo(app: CoordinatorApp, ledger: MutationLedger, ctx: CallContext,
                 request: pb.CreateDemoRepositoryRequest) -> pb.RepositoryView:
    mutation = mutation_of(ctx, "CreateDemoRepository", request.control)
    return ledger.run(mutation, request, pb.RepositoryView, lambda: _demo(app))


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def get_overview(ctx: CallContext, request: pb.GetOverviewRequest) -> pb.Overview:
        return _overview(app)

    def inspect(ctx: CallContext, request: pb.InspectRepositoryRequest) -> pb.RepositoryView:
        snapshot = inspect_path(request.path)
        return repository_view(snapshot, _known_id(app.db, snapshot),
                               suggested_requirement=demo.demo_requirement(app.location, snapshot.root))

    def create_demo(ctx: CallContext, request: pb.CreateDemoRepositoryRequest) -> pb.RepositoryView:
        return _create_demo(app, ledger, ctx, request)

    table: list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]] = [
        UnaryMethod(name=method_name(_SERVICE, "GetOverview"), request_type=pb.GetOverviewRequest,
                    response_type=pb.Overview, handler=get_overview),
        UnaryMethod(name=method_name(_SERVICE, "InspectRepository"), request_type=pb.InspectRepositoryRequest,
                    response_type=pb.RepositoryView, handler=inspect),
        UnaryMethod(name=method_name(_SERVICE, "CreateDemoRepository"), request_type=pb.CreateDemoRepositoryRequest,
                    response_type=pb.RepositoryView, handler=create_demo, mutating=True),
    ]
    return table
