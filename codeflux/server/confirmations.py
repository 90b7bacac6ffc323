"""Card confirmations: a decision made in the browser must answer a card the coordinator showed (issue 13).

When a reply on the browser connection carries a decision card — a task's plan awaiting approval
(``TaskView.plan``), a pending tool request (``PendingApproval``), a review (``ReviewView``) — the transport
stamps it with a fresh random value, kept only in this process and bound to what the card decides:

* ``approve-plan``: the task, the plan revision and its sha256;
* ``decide``: the tool request (allow-once, allow-for-task, allow-for-repository and deny alike: allowing an
  operation for every later task of the repository is a person's decision on this card like the others);
* ``accept``: the task and the diff identity (``ReviewView.accept_confirmation``);
* ``reject``: the task and the diff identity (``ReviewView.reject_confirmation``), for a plain reject and a
  reject with retry alike;
* ``invalidate-memory``: the memory entry and the time it entered the state the card showed
  (``MemoryEntryDetail.invalidate_confirmation``; none is issued for a quarantined entry);
* ``confirm-memory``: the same, for keeping an entry flagged ``needs-review``
  (``MemoryEntryDetail.confirm_confirmation``; issued only while it needs review);
* ``approve-instructions``: a repository's instruction file at one content — root, path and sha256
  (``InstructionFileView.approve_confirmation``);
* ``revoke-instructions``: one approval in force of such a file — root, path and the approved sha256
  (``InstructionApprovalView.revoke_confirmation``);
* ``dismiss-incident``, ``propose-incident-task``: an incident (``IncidentDetail.dismiss_confirmation``,
  ``IncidentDetail.propose_confirmation``), issued while it is new, task-proposed or regressed (the states either
  decision may leave; the service still refuses a proposal while the task proposed before is open or accepted).
* ``approve-endpoint``: a provider and one exact, normalized base URL (``EndpointApprovalCard.confirmation``:
  ``TaskView.endpoint_approval`` while a task's pinned endpoint waits for approval, and
  ``SettingsView.chosen_endpoint_approval`` for the stored choice's); another URL — even one that normalizes to the
  same — or another provider is another card.

``ApprovePlan``, ``Decide``, ``AcceptChange``, ``RejectChange``, ``MemoryService/Invalidate``,
``MemoryService/Confirm``, ``ApproveInstructionFile``, ``RevokeInstructionFile``, ``IncidentService/Dismiss``,
``IncidentService/Propose`` and ``SettingsService/ApproveEndpoint`` over the browser connection must send that value
back; the first decision carrying it uses it up. A decision without a value, or with one not issued for that card
(another card, an older plan revision or diff, a value already used, one from before a restart) is refused
(PERMISSION_DENIED, nothing decided) and journaled on the task as ``browser-decision-refused`` — never with the value
sent (a memory entry, an instruction-file or an incident decision belongs to no task: it is refused without a journal
entry; an endpoint approval is journaled on the task it names, if any). The one exception is an identical retry of a
decision already let through (same idempotency key, same value: the reconnect case); it reaches the mutation ledger,
which answers with the original result. The value is removed from the request before the service sees it, so the
ledger's request identity is the decision itself.

Over the Unix socket (CLI, headless) none of this applies: the socket's 0600 permission is its authority.
"""

from __future__ import annotations

import contextlib
import hmac
import secrets
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from codeflux.api.v1 import incidents_pb2, memory_pb2
from codeflux.api.v1 import product_pb2 as pb
from codeflux.domain.errors import InvalidValueError, NotFoundError, UnconfirmedDecisionError
from codeflux.services.registry import CallContext, Method, MethodTable, StreamMethod, UnaryMethod

__all__ = ["CardConfirmations", "RefusalRecorder"]

# A person's refusal is journaled with these words (BrowserDecisionRefused.reason).
MISSING: Final = "missing"
UNKNOWN: Final = "unknown"

_PER_CARD: Final = 8  # values outstanding per card (tabs and re-reads each get their own)
_MAX_CARDS: Final = 2048  # cards remembered at once; the least recently stamped goes first
_VALUE_BYTES: Final = 24

RefusalRecorder = Callable[[str, str, str, str], None]
"""``(task_id, decision, subject, reason)`` → journal the refusal on the task."""

_DECISIONS: Final = {
    "/codeflux.v1.TaskService/ApprovePlan": "approve-plan",
    "/codeflux.v1.ApprovalService/Decide": "decide",
    "/codeflux.v1.ReviewService/AcceptChange": "accept",
    "/codeflux.v1.ReviewService/RejectChange": "reject",
    "/codeflux.v1.MemoryService/Invalidate": "invalidate-memory",
    "/codeflux.v1.MemoryService/Confirm": "confirm-memory",
    "/codeflux.v1.InstructionService/ApproveInstructionFile": "approve-instructions",
    "/codeflux.v1.InstructionService/RevokeInstructionFile": "revoke-instructions",
    "/codeflux.v1.IncidentService/Dismiss": "dismiss-incident",
    "/codeflux.v1.IncidentService/Propose": "propose-incident-task",
    "/codeflux.v1.SettingsService/ApproveEndpoint": "approve-endpoint",
}
_CARD_TYPES: Final = frozenset({pb.TaskView.DESCRIPTOR, pb.PendingApproval.DESCRIPTOR, pb.ReviewView.DESCRIPTOR,
                                memory_pb2.MemoryEntryDetail.DESCRIPTOR, pb.InstructionFilesView.DESCRIPTOR,
                                incidents_pb2.IncidentDetail.DESCRIPTOR, pb.EndpointApprovalCard.DESCRIPTOR})
# An incident in one of these states may still be dismissed or get a task (codeflux/domain/incidents.py).
_OPEN_INCIDENT_STATES: Final = frozenset({"new", "task-proposed", "regressed"})


@dataclass(slots=True)
class _Card:
    values: dict[str, str | None] = field(default_factory=dict)  # value → idempotency key that used it


def _plan_card(task_id: str, revision: int, sha256: str) -> tuple[str, str]:
    return "approve-plan", f"{task_id}:r{revision}:{sha256}"


def _decide_card(request_id: str) -> tuple[str, str]:
    return "decide", request_id


def _accept_card(task_id: str, diff_identity: str) -> tuple[str, str]:
    return "accept", f"{task_id}:{diff_identity}"


def _reject_card(task_id: str, diff_identity: str) -> tuple[str, str]:
    return "reject", f"{task_id}:{diff_identity}"


def _invalidate_memory_card(entry_id: str, state_since_us: int) -> tuple[str, str]:
    return "invalidate-memory", f"{entry_id}:{state_since_us}"


def _confirm_memory_card(entry_id: str, state_since_us: int) -> tuple[str, str]:
    return "confirm-memory", f"{entry_id}:{state_since_us}"


def _incident_card(decision: str, incident_id: str) -> tuple[str, str]:
    return decision, incident_id


def _endpoint_card(provider: str, base_url: str) -> tuple[str, str]:
    return "approve-endpoint", f"{provider}\x00{base_url}"


def _instructions_card(decision: str, root: str, path: str, sha256: str) -> tuple[str, str]:
    return decision, f"{root}\x00{path}\x00{sha256}"


class CardConfirmations:
    """The values issued on this server's browser connections. Thread-safe (unary handlers run in threads)."""

    def __init__(self, record: RefusalRecorder | None = None) -> None:
        self._record = record
        self._lock = threading.Lock()
        self._cards: OrderedDict[tuple[str, str], _Card] = OrderedDict()
        self._holds_cards: dict[Descriptor, bool] = {}

    def __repr__(self) -> str:
        return f"CardConfirmations(cards={len(self._cards)})"

    # ─── issuing ────────────────────────────────────────────────────────────────────────────────────

    def _issue(self, card: tuple[str, str]) -> str:
        value = secrets.token_urlsafe(_VALUE_BYTES)
        with self._lock:
            held = self._cards.pop(card, None) or _Card()
            unused = [v for v, used_by in held.values.items() if used_by is None]
            if len(unused) >= _PER_CARD:
                del held.values[unused[0]]
            held.values[value] = None
            self._cards[card] = held
            while len(self._cards) > _MAX_CARDS:
                self._cards.popitem(last=False)
        return value

    def stamp(self, message: Message) -> None:
        """Fill in a confirmation value on every card ``message`` holds (in place)."""
        if isinstance(message, pb.TaskView):
            plan = message.plan if message.HasField("plan") else None
            if plan is not None and message.state == "awaiting-plan-approval" and plan.decision == "undecided":
                plan.confirmation = self._issue(_plan_card(message.task_id, plan.revision, plan.sha256))
        elif isinstance(message, pb.PendingApproval | pb.EndpointApprovalCard):
            self._stamp_answer(message)
            return
        elif isinstance(message, pb.InstructionFilesView):
            self._stamp_instructions(message)
            return
        elif isinstance(message, pb.ReviewView) and message.diff_identity:
            message.accept_confirmation = self._issue(_accept_card(message.task_id, message.diff_identity))
            message.reject_confirmation = self._issue(_reject_card(message.task_id, message.diff_identity))
        elif isinstance(message, memory_pb2.MemoryEntryDetail) and message.entry.state != "quarantined":
            message.invalidate_confirmation = self._issue(
                _invalidate_memory_card(message.entry.entry_id, message.entry.state_since_us))
            if message.entry.state == "needs-review":
                message.confirm_confirmation = self._issue(
                    _confirm_memory_card(message.entry.entry_id, message.entry.state_since_us))
            return
        elif isinstance(message, incidents_pb2.IncidentDetail):
            self._stamp_incident(message)
            return
        for descriptor, value in message.ListFields():
            if descriptor.type != FieldDescriptor.TYPE_MESSAGE or not self._may_hold(descriptor.message_type):
                continue
            for item in (value if descriptor.is_repeated else [value]):
                self.stamp(item)

    def _stamp_answer(self, card: pb.PendingApproval | pb.EndpointApprovalCard) -> None:
        if isinstance(card, pb.PendingApproval):
            card.confirmation = self._issue(_decide_card(card.request_id))
        elif card.provider and card.base_url:
            card.confirmation = self._issue(_endpoint_card(card.provider, card.base_url))

    def _stamp_incident(self, detail: incidents_pb2.IncidentDetail) -> None:
        if detail.incident.state in _OPEN_INCIDENT_STATES:
            incident_id = detail.incident.incident_id
            detail.dismiss_confirmation = self._issue(_incident_card("dismiss-incident", incident_id))
            detail.propose_confirmation = self._issue(_incident_card("propose-incident-task", incident_id))

    def _stamp_instructions(self, view: pb.InstructionFilesView) -> None:
        for file in view.files:
            if file.state != "approved" and not file.problem and file.sha256:
                file.approve_confirmation = self._issue(
                    _instructions_card("approve-instructions", view.root, file.path, file.sha256))
            for approval in file.approvals:
                if not approval.revoked_at:
                    approval.revoke_confirmation = self._issue(
                        _instructions_card("revoke-instructions", view.root, file.path, approval.sha256))

    def _may_hold(self, descriptor: Descriptor) -> bool:
        """Whether a message of this type can contain a card (so replies without any are not walked)."""
        known = self._holds_cards.get(descriptor)
        if known is not None:
            return known
        self._holds_cards[descriptor] = False  # a recursive type is settled by its other fields
        holds = descriptor in _CARD_TYPES or any(
            self._may_hold(item.message_type) for item in descriptor.fields if item.type == FieldDescriptor.TYPE_MESSAGE
        )
        self._holds_cards[descriptor] = holds
        return holds

    # ─── checking ───────────────────────────────────────────────────────────────────────────────────

    def admit(self, method: str, request: Message) -> None:
        """Let a browser decision through (its value removed from ``request``) or refuse and journal it."""
        decision = _DECISIONS[method]
        card, task_id, subject = _card_of(request, decision)
        value = str(getattr(request, "confirmation", ""))
        request.ClearField("confirmation")
        key = str(request.control.idempotency_key)
        reason = MISSING if not value else None if self._use(card, value, key) else UNKNOWN
        if reason is None:
            return
        if self._record is not None and task_id:
            with contextlib.suppress(NotFoundError, InvalidValueError):  # no such task: nothing to journal it on
                self._record(task_id, decision, subject, reason)
        raise UnconfirmedDecisionError(decision=decision, subject=subject, reason=reason)

    def _use(self, card: tuple[str, str], value: str, key: str) -> bool:
        with self._lock:
            held = self._cards.get(card)
            if held is None:
                return False
            matched = None
            for candidate in held.values:  # each compared in constant time, no early exit
                if hmac.compare_digest(candidate.encode(), value.encode("utf-8", "surrogatepass")):
                    matched = candidate
            if matched is None:
                return False
            used_by = held.values[matched]
            if used_by is None:
                held.values[matched] = key
                return True
            return bool(key) and used_by == key  # the identical retry of a decision already let through

    # ─── the browser's method table ─────────────────────────────────────────────────────────────────

    def guard(self, table: MethodTable) -> MethodTable:
        """``table`` as the browser connection sees it: decisions checked, card-carrying replies stamped."""
        return MethodTable.of(self._guarded(method) for method in table.methods.values())

    def _guarded(self, method: Method) -> Method:
        name, inner = method.name, method.handler
        if isinstance(method, StreamMethod):
            if not self._may_hold(method.response_type.DESCRIPTOR):
                return method

            async def stream(ctx: CallContext, request: Message) -> AsyncIterator[Message]:
                async for reply in inner(ctx, request):
                    self.stamp(reply)
                    yield reply

            return StreamMethod(name=name, request_type=method.request_type, response_type=method.response_type,
                                handler=stream)
        checks = name in _DECISIONS
        stamps = self._may_hold(method.response_type.DESCRIPTOR)
        if not checks and not stamps:
            return method

        def unary(ctx: CallContext, request: Message) -> Message:
            if checks:
                self.admit(name, request)
            reply = inner(ctx, request)
            if stamps:
                self.stamp(reply)
            return reply

        return UnaryMethod(name=name, request_type=method.request_type, response_type=method.response_type,
                           handler=unary, mutating=method.mutating)


def _card_of(request: Message, decision: str) -> tuple[tuple[str, str], str, str]:
    """The card a decision request answers, its task (empty for none) and the subject journaled on a refusal."""
    if isinstance(request, pb.InstructionFileDecisionRequest):
        card = _instructions_card(decision, request.repository_path, request.path, request.sha256)
        return card, "", request.path
    if isinstance(request, pb.ApprovePlanRequest):
        return _plan_card(request.task_id, request.revision, request.sha256), request.task_id, f"r{request.revision}"
    if isinstance(request, pb.DecideRequest):
        return _decide_card(request.request_id), request.task_id, request.request_id
    if isinstance(request, pb.AcceptChangeRequest):
        return _accept_card(request.task_id, request.diff_identity), request.task_id, request.diff_identity
    if isinstance(request, pb.RejectChangeRequest):
        return _reject_card(request.task_id, request.diff_identity), request.task_id, request.diff_identity
    if isinstance(request, memory_pb2.InvalidateMemoryRequest):  # no task to journal a refusal on
        return _invalidate_memory_card(request.entry_id, request.state_since_us), "", request.entry_id
    if isinstance(request, memory_pb2.ConfirmMemoryRequest):
        return _confirm_memory_card(request.entry_id, request.state_since_us), "", request.entry_id
    if isinstance(request, pb.ApproveEndpointRequest):  # journaled on the task whose card it names, if any
        return _endpoint_card(request.provider, request.base_url), request.task_id, request.base_url
    if isinstance(request, incidents_pb2.DismissIncidentRequest | incidents_pb2.ProposeIncidentTaskRequest):
        return _incident_card(decision, request.incident_id), "", request.incident_id  # no task to journal on
    raise TypeError(type(request).__name__)
