"""SQL of the implementation loop's conversations (see ``migrations/000008_loop_transcripts.sql``).

A conversation belongs to a task and the approved plan revision it carries out; its messages are stored
as the loop hands them over — already redacted and bounded by the loop (this module never sees a secret
it could hide: the redaction pipeline is the coordinator's). Messages append in order while an attempt
of the task is open and never change; a conversation changes once, when it is closed, and at most one
per task is open (opening a new one closes the previous one in the same transaction).

:func:`message_to_json` / :func:`message_from_json` are the one encoding of a
:class:`~codeflux.domain.models.Message` in this table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.models import Message, MessagePart, ReasoningPart, Role, TextPart, ToolCall, ToolResult
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice

__all__ = [
    "MAX_CONVERSATION_MESSAGES",
    "MAX_MESSAGE_BYTES",
    "LoopConversationRow",
    "LoopMessageRow",
    "append_loop_message",
    "close_loop_conversation",
    "latest_loop_conversation",
    "loop_conversations_of_task",
    "loop_messages_of",
    "message_from_json",
    "message_to_json",
    "open_loop_conversation",
]

MAX_CONVERSATION_MESSAGES: Final = 2048
"""Messages one conversation may hold (the schema refuses more)."""
MAX_MESSAGE_BYTES: Final = 4 * 1024 * 1024
"""The UTF-8 size of one message's parts as stored (the schema refuses more)."""

_CONVERSATION = ("id, task_id, plan_revision, plan_sha256, opened_in_attempt, opened_at_us, closed_at_us,"
                 " closed_reason")
_MESSAGE = ("conversation_id, sequence, task_id, attempt, role, turn_key, parts_json, steps_done_json, redacted,"
            " recorded_at_us")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopConversationRow:
    conversation_id: int
    task_id: TaskId
    plan_revision: int
    plan_sha256: str
    opened_in_attempt: int
    opened_at_us: int
    closed_at_us: int | None
    closed_reason: str | None

    @property
    def is_open(self) -> bool:
        return self.closed_at_us is None


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopMessageRow:
    conversation_id: int
    sequence: int
    task_id: TaskId
    attempt: int
    message: Message
    turn_key: str | None
    steps_done: tuple[int, ...]
    redacted: bool
    recorded_at_us: int


def _conversation(row: Row) -> LoopConversationRow:
    return LoopConversationRow(
        conversation_id=int(row[0]), task_id=TaskId.parse(str(row[1])), plan_revision=int(row[2]),
        plan_sha256=str(row[3]), opened_in_attempt=int(row[4]), opened_at_us=int(row[5]),
        closed_at_us=None if row[6] is None else int(row[6]), closed_reason=None if row[7] is None else str(row[7]))


def _message(row: Row) -> LoopMessageRow:
    role = decode_choice(Role, row[4], kind="message role")
    return LoopMessageRow(
        conversation_id=int(row[0]), sequence=int(row[1]), task_id=TaskId.parse(str(row[2])), attempt=int(row[3]),
        message=message_from_json(role, str(row[6])), turn_key=None if row[5] is None else str(row[5]),
        steps_done=tuple(int(index) for index in json.loads(str(row[7]))), redacted=bool(row[8]),
        recorded_at_us=int(row[9]))


# ─── the encoding of a message ───────────────────────────────────────────────────────────────────────


def _part_json(part: MessagePart) -> dict[str, object]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ReasoningPart):
        stored: dict[str, object] = {"type": "reasoning", "text": part.text, "signature": part.signature,
                                     "redacted": part.redacted}
        if part.item_id:  # an OpenAI Responses reasoning item
            stored["item_id"] = part.item_id
        return stored
    if isinstance(part, ToolCall):
        return {"type": "tool-call", "call_id": part.call_id, "name": part.name, "arguments_json": part.arguments_json}
    return {"type": "tool-result", "call_id": part.call_id, "content": part.content, "is_error": part.is_error}


def message_to_json(message: Message) -> str:
    """The parts of ``message`` as the JSON array stored in ``loop_messages.parts_json``."""
    return json.dumps([_part_json(part) for part in message.parts], ensure_ascii=False, separators=(",", ":"))


def _text(raw: dict[str, object], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise InvalidValueError(kind="stored conversation message", reason=f"{key} is not text")
    return value


def _part_from_json(raw: object) -> MessagePart:
    if not isinstance(raw, dict):
        raise InvalidValueError(kind="stored conversation message", reason="a part is not an object")
    match raw.get("type"):
        case "text":
            return TextPart(text=_text(raw, "text"))
        case "reasoning":
            return ReasoningPart(text=_text(raw, "text"), signature=_text(raw, "signature"),
                                 redacted=raw.get("redacted") is True,
                                 item_id=_text(raw, "item_id") if "item_id" in raw else "")
        case "tool-call":
            return ToolCall(call_id=_text(raw, "call_id"), name=_text(raw, "name"),
                            arguments_json=_text(raw, "arguments_json"))
        case "tool-result":
            return ToolResult(call_id=_text(raw, "call_id"), content=_text(raw, "content"),
                              is_error=raw.get("is_error") is True)
    raise InvalidValueError(kind="stored conversation message", reason="a part has an unknown type")


def message_from_json(role: Role, parts_json: str) -> Message:
    """The :class:`Message` that :func:`message_to_json` stored."""
    raw = json.loads(parts_json)
    if not isinstance(raw, list):
        raise InvalidValueError(kind="stored conversation message", reason="the parts are not a list")
    return Message(role=role, parts=tuple(_part_from_json(part) for part in raw))


# ─── conversations ───────────────────────────────────────────────────────────────────────────────────


def latest_loop_conversation(view: ReadView, task_id: TaskId) -> LoopConversationRow | None:
    """The task's newest conversation (open or closed), or None before its first."""
    row = view.query_one(f"SELECT {_CONVERSATION} FROM loop_conversations WHERE task_id = ?"  # noqa: S608
                         " ORDER BY id DESC LIMIT 1", (task_id.value,))
    return None if row is None else _conversation(row)


def loop_conversations_of_task(view: ReadView, task_id: TaskId) -> list[LoopConversationRow]:
    """Every conversation of the task, oldest first."""
    rows = view.query_all(f"SELECT {_CONVERSATION} FROM loop_conversations WHERE task_id = ?"  # noqa: S608
                          " ORDER BY id", (task_id.value,))
    return [_conversation(row) for row in rows]


def close_loop_conversation(tx: Transaction, *, task_id: TaskId, reason: str, at_us: int) -> LoopConversationRow | None:
    """Close the task's open conversation with ``reason``; None when none is open."""
    rows = tx.execute(f"UPDATE loop_conversations SET closed_at_us = ?, closed_reason = ?"  # noqa: S608
                      f" WHERE task_id = ? AND closed_at_us IS NULL RETURNING {_CONVERSATION}",
                      (at_us, reason[:2048], task_id.value))
    return _conversation(rows[0]) if rows else None


def open_loop_conversation(
    tx: Transaction, *, task_id: TaskId, plan_revision: int, plan_sha256: str, attempt: int, at_us: int,
    superseding_reason: str,
) -> LoopConversationRow:  # fmt: skip
    """Open a conversation in the task's open ``attempt`` under its plan; an open one is closed first with
    ``superseding_reason`` (the schema refuses a conversation outside an open attempt of that plan)."""
    close_loop_conversation(tx, task_id=task_id, reason=superseding_reason, at_us=at_us)
    rows = tx.execute(
        f"INSERT INTO loop_conversations ({_CONVERSATION}) VALUES (NULL, ?, ?, ?, ?, ?, NULL, NULL)"  # noqa: S608
        f" RETURNING {_CONVERSATION}",
        (task_id.value, plan_revision, plan_sha256, attempt, at_us),
    )
    return _conversation(rows[0])


# ─── messages ────────────────────────────────────────────────────────────────────────────────────────


def append_loop_message(
    tx: Transaction, *, conversation_id: int, task_id: TaskId, attempt: int, message: Message,
    turn_key: str | None, steps_done: Iterable[int], redacted: bool, at_us: int,
) -> LoopMessageRow:  # fmt: skip
    """Append ``message`` (already redacted and bounded by the caller) as the conversation's next message."""
    rows = tx.execute(
        f"INSERT INTO loop_messages ({_MESSAGE}) SELECT ?, count(*) + 1, ?, ?, ?, ?, ?, ?, ?, ?"  # noqa: S608
        f" FROM loop_messages WHERE conversation_id = ? RETURNING {_MESSAGE}",
        (conversation_id, task_id.value, attempt, message.role.value, turn_key, message_to_json(message),
         json.dumps(sorted(set(steps_done))), int(redacted), at_us, conversation_id),
    )
    return _message(rows[0])


def loop_messages_of(view: ReadView, conversation_id: int) -> list[LoopMessageRow]:
    """Every message of the conversation, in order."""
    rows = view.query_all(f"SELECT {_MESSAGE} FROM loop_messages WHERE conversation_id = ?"  # noqa: S608
                          " ORDER BY sequence", (conversation_id,))
    return [_message(row) for row in rows]
