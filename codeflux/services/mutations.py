"""The rules every mutating request passes before its handler does anything: its ``MutationControl``.

* **Idempotency key**: 1..128 characters of ``[A-Za-z0-9-_.:]``, required (INVALID_ARGUMENT otherwise).
  It is scoped to the caller's connection (:attr:`CallContext.connection_id`) and the method, and
  passed on to the coordinator wherever the coordinator takes keys (so a retry replays the recorded
  transaction there). :class:`MutationLedger` adds the same guarantee for the parts of a call the
  coordinator does not key (starting a background run, answering a tool request, cancelling): the same
  key with the same request returns the reply recorded the first time; with another request it is
  refused with :class:`IdempotencyConflictError` (ABORTED / DUPLICATE). The ledger lives in memory: a
  restarted coordinator forgets it, while the coordinator's own keys are durable.
* **expected_revision**: when non-zero, the task's revision must still be that one, else
  :class:`StaleRevisionError` (ABORTED / STALE_REVISION).
* Ids are parsed with :mod:`codeflux.domain.ids`; a malformed one is INVALID_ARGUMENT with a message
  that does not echo the value.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from google.protobuf.message import Message

from codeflux.api.v1 import common_pb2
from codeflux.domain.errors import IdempotencyConflictError, InvalidValueError, StaleRevisionError
from codeflux.domain.ids import TaskId
from codeflux.services.registry import CallContext

__all__ = ["Mutation", "MutationLedger", "check_expected_revision", "mutation_of", "parse_request_id", "parse_task_id"]

_KEY: Final = re.compile(r"[A-Za-z0-9\-_.:]{1,128}")
_REMEMBERED: Final = 4096
Rep = TypeVar("Rep", bound=Message)


@dataclass(frozen=True, slots=True, kw_only=True)
class Mutation:
    """A validated ``MutationControl``: ``key`` is the caller's key scoped to its connection and method
    (what the coordinator receives); ``expected_revision`` is None when the caller gave none."""

    key: str
    expected_revision: int | None
    caller_key: str


def mutation_of(ctx: CallContext, method: str, control: common_pb2.MutationControl) -> Mutation:
    """The request's mutation control, or :class:`InvalidValueError` (INVALID_ARGUMENT)."""
    key = control.idempotency_key
    if _KEY.fullmatch(key) is None:
        raise InvalidValueError(kind="idempotency key",
                                reason="every change needs a key of 1 to 128 characters of A-Z a-z 0-9 - _ . :")
    if control.expected_revision < 0:
        raise InvalidValueError(kind="expected revision", reason="must not be negative")
    connection = hashlib.sha256(ctx.connection_id.encode("utf-8")).hexdigest()[:24]
    return Mutation(key=f"svc:{connection}:{method}:{key}", expected_revision=control.expected_revision or None,
                    caller_key=key)


IdT = TypeVar("IdT")


def parse_request_id(parse: Callable[[str], IdT], text: str, *, kind: str, prefix: str) -> IdT:
    """An id from a request (``parse`` is the id type's), or INVALID_ARGUMENT that does not repeat what was sent."""
    try:
        return parse(text)
    except (InvalidValueError, TypeError, ValueError):
        raise InvalidValueError(kind=kind, reason=f"expected an id like {prefix}… as codeflux printed it") from None


def parse_task_id(text: str) -> TaskId:
    """A task id from a request, or INVALID_ARGUMENT that does not repeat what was sent."""
    return parse_request_id(TaskId.parse, text, kind="task id", prefix="tsk_")


def check_expected_revision(task_id: TaskId, mutation: Mutation, actual: int) -> None:
    """Refuse with :class:`StaleRevisionError` when the caller saw another revision of the task."""
    if mutation.expected_revision is not None and mutation.expected_revision != actual:
        raise StaleRevisionError(kind="task", entity_id=task_id.value, expected=mutation.expected_revision,
                                 actual=actual)


@dataclass(slots=True)
class _Entry:
    digest: str
    done: threading.Event
    reply: bytes | None = None


class MutationLedger:
    """Replays the recorded reply of a mutation retried with the same key (see the module docstring).

    A call that raised is not recorded, so it can be retried with the same key. Two concurrent calls with
    one key run one after the other: the second waits for the first and gets its reply.
    """

    def __init__(self, *, capacity: int = _REMEMBERED) -> None:
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._capacity = capacity

    def run(self, mutation: Mutation, request: Message, reply_type: type[Rep], work: Callable[[], Rep]) -> Rep:
        digest = _fingerprint(request)
        while True:
            with self._lock:
                entry = self._entries.get(mutation.key)
                if entry is None:
                    entry = _Entry(digest=digest, done=threading.Event())
                    self._entries[mutation.key] = entry
                    while len(self._entries) > self._capacity:
                        self._entries.popitem(last=False)
                    break
                if entry.digest != digest:
                    raise IdempotencyConflictError(scope="this connection's requests", key=mutation.caller_key)
                if entry.done.is_set() and entry.reply is not None:
                    replayed: Rep = reply_type.FromString(entry.reply)
                    return replayed
            entry.done.wait()
        try:
            reply = work()
        except BaseException:
            with self._lock:
                if self._entries.get(mutation.key) is entry:
                    del self._entries[mutation.key]
            entry.done.set()
            raise
        entry.reply = reply.SerializeToString(deterministic=True)
        entry.done.set()
        return reply


def _fingerprint(request: Message) -> str:
    """The request's content without its mutation control (the key and revision are not the content)."""
    copy = type(request)()
    copy.CopyFrom(request)
    if "control" in copy.DESCRIPTOR.fields_by_name:
        copy.ClearField("control")
    return hashlib.sha256(copy.SerializeToString(deterministic=True)).hexdigest()
