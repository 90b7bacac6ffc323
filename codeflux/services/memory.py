"""``MemoryService``: the entries codeflux learned, their verdicts, provenance and quarantine (docs/memory.md).

* ``List`` — entries newest first (one kind, one state, or those matching words of ``query`` — words only, never
  search syntax), each with its applicability verdict in its repository's known checkout as it is now
  (:mod:`codeflux.coordinator.memory`; "not-checked" when no checkout is known — never "applicable").
* ``Show`` — one entry with its sources, evidence, provenance edges (and the state of the entry at each other end)
  and every state it entered. Its reply is the browser's "invalidate" card.
* ``Invalidate`` (mutating) — a person quarantines the entry with a reason; everything derived from it is
  quarantined and what it influenced flagged ``needs-review``, in one transaction. An entry already quarantined
  refuses (FAILED_PRECONDITION / INVALID_TRANSITION): quarantine is final; only a new entry replaces one.
* ``Confirm`` (mutating) — a person reviewed an entry flagged ``needs-review`` and keeps it: active again, the
  reason recorded. Any other state refuses (FAILED_PRECONDITION / INVALID_TRANSITION).
* ``Export`` — every entry, edge and state as one JSON document.
"""

from __future__ import annotations

import json
from typing import Final, TypeVar

from google.protobuf.message import Message

from codeflux.api.v1 import memory_pb2 as pb
from codeflux.coordinator.memory import (
    MemoryDetail,
    ShownEntry,
    confirm_memory_by_person,
    export_memory,
    invalidate_memory_by_person,
    list_memory,
    show_memory,
)
from codeflux.domain.errors import InvalidValueError, StaleRevisionError
from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import MemoryKind, MemoryState, parse_reason
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import MutationLedger, mutation_of, parse_request_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.views import rfc3339_of_us as _iso

__all__ = ["detail_view", "entry_view", "methods", "parse_memory_entry_id"]

_SERVICE: Final = "MemoryService"


def parse_memory_entry_id(text: str) -> MemoryEntryId:
    """A memory entry id from a request, or INVALID_ARGUMENT that does not repeat what was sent."""
    return parse_request_id(MemoryEntryId.parse, text, kind="memory entry id", prefix="mem_")


E = TypeVar("E", MemoryKind, MemoryState)


def _choice(vocabulary: type[E], text: str, what: str) -> E | None:
    if not text:
        return None
    try:
        return vocabulary(text)
    except ValueError:
        raise InvalidValueError(kind=what, reason="one of " + ", ".join(m.value for m in vocabulary)) from None


def entry_view(shown: ShownEntry) -> pb.MemoryEntryView:
    entry, verdict = shown.entry, shown.verdict
    view = pb.MemoryEntryView(
        entry_id=entry.entry_id.value, kind=entry.kind.value, text=entry.text,
        body_json=json.dumps(dict(entry.body), sort_keys=True, ensure_ascii=False), root_commit=entry.root_commit,
        toolchain=entry.toolchain.as_dict(), dependency_hash=entry.dependency_hash,
        learned_at_commit=entry.learned_at_commit, replaces_id="" if entry.replaces is None else entry.replaces.value,
        created_at=_iso(entry.created_at_us), state=entry.state.value, state_cause=entry.state_cause.value,
        state_reason=entry.state_reason, state_since=_iso(entry.state_since_us), state_since_us=entry.state_since_us,
        sources=[pb.MemorySourceView(path=s.path, blob_sha=s.blob_sha) for s in entry.sources],
        evidence=[pb.MemoryEvidenceView(kind=e.kind.value, ref=e.ref) for e in entry.evidence])
    if verdict is None:
        view.verdict.CopyFrom(pb.MemoryVerdictView(
            checked=False, applicable=False, reason="not-checked",
            detail="no known checkout of this repository to check against; it is not used until one is"))
    else:
        view.verdict.CopyFrom(pb.MemoryVerdictView(checked=True, applicable=verdict.applicable,
                                                   reason=verdict.reason.value, detail=verdict.detail))
    return view


def detail_view(detail: MemoryDetail) -> pb.MemoryEntryDetail:
    this = detail.shown.entry.entry_id
    edges = []
    for edge in detail.edges:
        other = detail.others.get(edge.source if edge.dependent == this else edge.dependent)
        edges.append(pb.MemoryEdgeView(kind=edge.kind.value, dependent_id=edge.dependent.value,
                                       source_id=edge.source.value, other_text="" if other is None else other.text,
                                       other_state="" if other is None else other.state.value))
    history = [pb.MemoryStateView(sequence=h.sequence, state=h.state.value, cause=h.cause.value,
                                  cause_entry_id="" if h.cause_entry is None else h.cause_entry.value,
                                  reason=h.reason, recorded_at=_iso(h.recorded_at_us)) for h in detail.history]
    return pb.MemoryEntryDetail(entry=entry_view(detail.shown), edges=edges, history=history)


def _still_as_shown(app: CoordinatorApp, entry_id: MemoryEntryId, state_since_us: int) -> None:
    """The browser's card: the entry must still be in the state it showed (the CLI sends no time)."""
    if state_since_us:
        since = show_memory(app.db, entry_id).shown.entry.state_since_us
        if since != state_since_us:
            raise StaleRevisionError(kind="memory entry", entity_id=entry_id.value, expected=state_since_us,
                                     actual=since)


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def list_entries(ctx: CallContext, request: pb.ListMemoryRequest) -> pb.MemoryList:
        shown = list_memory(app.db, kind=_choice(MemoryKind, request.kind, "memory kind"),
                            state=_choice(MemoryState, request.state, "memory state"), query=request.query,
                            limit=request.limit or 100)
        return pb.MemoryList(entries=[entry_view(s) for s in shown])

    def show(ctx: CallContext, request: pb.ShowMemoryRequest) -> pb.MemoryEntryDetail:
        return detail_view(show_memory(app.db, parse_memory_entry_id(request.entry_id)))

    def invalidate(ctx: CallContext, request: pb.InvalidateMemoryRequest) -> pb.MemoryInvalidationView:
        mutation = mutation_of(ctx, "Invalidate", request.control)
        entry_id = parse_memory_entry_id(request.entry_id)
        reason = parse_reason(request.reason)

        def work() -> pb.MemoryInvalidationView:
            _still_as_shown(app, entry_id, request.state_since_us)
            done = invalidate_memory_by_person(app.db, entry_id, reason=reason)
            return pb.MemoryInvalidationView(entry_id=entry_id.value,
                                             quarantined_ids=[e.value for e in done.quarantined],
                                             flagged_ids=[e.value for e in done.flagged],
                                             detail=detail_view(show_memory(app.db, entry_id)))

        return ledger.run(mutation, request, pb.MemoryInvalidationView, work)

    def confirm(ctx: CallContext, request: pb.ConfirmMemoryRequest) -> pb.MemoryEntryDetail:
        mutation = mutation_of(ctx, "Confirm", request.control)
        entry_id = parse_memory_entry_id(request.entry_id)
        reason = parse_reason(request.reason)

        def work() -> pb.MemoryEntryDetail:
            _still_as_shown(app, entry_id, request.state_since_us)
            confirm_memory_by_person(app.db, entry_id, reason=reason)
            return detail_view(show_memory(app.db, entry_id))

        return ledger.run(mutation, request, pb.MemoryEntryDetail, work)

    def export(ctx: CallContext, request: pb.ExportMemoryRequest) -> pb.MemoryExport:
        document, count = export_memory(app.db)
        return pb.MemoryExport(document_json=document, entries=count)

    return [
        UnaryMethod(name=method_name(_SERVICE, "List"), request_type=pb.ListMemoryRequest,
                    response_type=pb.MemoryList, handler=list_entries),
        UnaryMethod(name=method_name(_SERVICE, "Show"), request_type=pb.ShowMemoryRequest,
                    response_type=pb.MemoryEntryDetail, handler=show),
        UnaryMethod(name=method_name(_SERVICE, "Invalidate"), request_type=pb.InvalidateMemoryRequest,
                    response_type=pb.MemoryInvalidationView, handler=invalidate, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "Confirm"), request_type=pb.ConfirmMemoryRequest,
                    response_type=pb.MemoryEntryDetail, handler=confirm, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "Export"), request_type=pb.ExportMemoryRequest,
                    response_type=pb.MemoryExport, handler=export),
    ]
