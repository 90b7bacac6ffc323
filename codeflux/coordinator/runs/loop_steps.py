"""The implementation loop's bookkeeping: which plan steps are done, what a tool result says, and the
conversation kept in SQLite.

The step tracker records which plan steps a compatible tool **succeeded** on one of its expected files for:
``write_file`` or ``edit_file`` on that path, or ``apply_patch`` whose diff names it (a step that names no
file counts once any such write succeeded). It is bookkeeping for the transcript and ``task resume``, not a
completion rule: the planner's expected files are guesses, and only the ``finish`` tool ends the loop
(:mod:`codeflux.coordinator.runs.finish`).

:class:`LoopTranscript` keeps the loop's conversation (``migrations/000008_loop_transcripts.sql``) so a
resumed run — the next attempt after a pause, a refused model call or a crash, in this process or
another — continues it with the plan steps already done. Every message passes the redaction pipeline
(exact loaded secrets and key patterns, :func:`codeflux.redact.default_redactor`) and is bounded before
it is written: what is stored is what a resumed run sends, so a resumed conversation never carries a
secret either. A conversation continues only under the plan revision (and hash) it was opened for.

Thinking blocks are the exception to "redacted": a provider checks their signatures when they come back,
so one is stored **unaltered or not at all** — unaltered when the redaction scan finds nothing in it
(:func:`thinking_kept_unaltered`), else dropped. The loop never lets a turn whose tool calls carry a
block that would be dropped reach storage: it restarts that turn instead (an open tool cycle must send
its thinking back). An empty assistant turn is never stored, and one stored by an older codeflux is left
out when the conversation is restored, so it is never sent again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from codeflux.coordinator.runs.tool_driver import ExecutionRecord
from codeflux.coordinator.tasks.changes import TaskChanges
from codeflux.domain.errors import UsageError
from codeflux.domain.events import AgentMessage
from codeflux.domain.execution import ToolExecutionState
from codeflux.domain.ids import TaskId
from codeflux.domain.models import Message, MessagePart, ReasoningPart, Role, TextPart, ToolCall, ToolResult
from codeflux.domain.plans import Plan
from codeflux.domain.tools import ToolName
from codeflux.domain.truncation import keep_head, keep_head_and_tail
from codeflux.redact import REDACTED, Redactor, default_redactor
from codeflux.store import loop_transcripts as transcript_rows
from codeflux.store import stage_ledger as ledger_rows
from codeflux.store.database import ReadView, Transaction
from codeflux.store.events import append_event
from codeflux.store.task_records import require_task_record

__all__ = [
    "SHOWN_SHA256_LABEL",
    "WRITING_TOOLS",
    "ConversationSummary",
    "LoopTranscript",
    "RestoredConversation",
    "StepTracker",
    "clean_path",
    "close_conversation",
    "conversation_summary",
    "describe_execution",
    "execution_failed",
    "paths_written",
    "thinking_kept_unaltered",
]

WRITING_TOOLS: Final = frozenset({ToolName.WRITE_FILE.value, ToolName.EDIT_FILE.value, ToolName.APPLY_PATCH.value})
SHOWN_SHA256_LABEL: Final = "sha256 of the file now: "
"""How :func:`describe_execution` shows the sha256 of the file read or written (on a line of its own)."""
_SHOWN_CONTENT_CHARS: Final = 20_000
"""Content shown to the model: above every reading tool's output cap, so the tool's own cut — which says
how to read on — is what the model sees."""
_SHOWN_STREAM_CHARS: Final = 16_000
"""Each output stream shown to the model (head and tail)."""


def clean_path(path: str) -> str:
    parts = [part for part in path.strip().split("/") if part not in ("", ".")]
    return "/".join(parts)


def paths_written(tool: str, arguments: Mapping[str, object]) -> frozenset[str]:
    """The repository-relative paths a successful ``tool`` call with ``arguments`` wrote."""
    if tool in (ToolName.WRITE_FILE.value, ToolName.EDIT_FILE.value):
        path = arguments.get("path")
        return frozenset({clean_path(path)}) if isinstance(path, str) else frozenset()
    if tool == ToolName.APPLY_PATCH.value:
        patch = arguments.get("patch")
        if not isinstance(patch, str):
            return frozenset()
        found = set()
        for line in patch.splitlines():
            if line.startswith(("+++ ", "--- ")):
                name = line[4:].split("\t", 1)[0].strip()
                if name != "/dev/null":
                    found.add(clean_path(name[2:] if name.startswith(("a/", "b/")) else name))
        return frozenset(found)
    return frozenset()


@dataclass(slots=True)
class StepTracker:
    """The plan's steps and which of them a successful write has completed (by index in the plan)."""

    plan: Plan
    done: set[int] = field(default_factory=set)

    def restore(self, done: tuple[int, ...]) -> None:
        """Take the steps a stored conversation had done (indexes outside the plan are ignored)."""
        self.done |= {index for index in done if 0 <= index < len(self.plan.steps)}

    def record_write(self, paths: frozenset[str]) -> None:
        if not paths:
            return
        for index, step in enumerate(self.plan.steps):
            if not step.expected_files or paths & set(step.expected_files):
                self.done.add(index)

    @property
    def pending_titles(self) -> tuple[str, ...]:
        return tuple(step.title for index, step in enumerate(self.plan.steps) if index not in self.done)

    @property
    def done_titles(self) -> tuple[str, ...]:
        return tuple(step.title for index, step in enumerate(self.plan.steps) if index in self.done)

    @property
    def all_done(self) -> bool:
        return len(self.done) == len(self.plan.steps)


def execution_failed(record: ExecutionRecord) -> bool:
    """A tool execution failed when it did not succeed, or its program exited non-zero."""
    return record.state is not ToolExecutionState.SUCCEEDED or (record.exit_code is not None and record.exit_code != 0)


def describe_execution(record: ExecutionRecord) -> str:
    """What the model is told about an execution (text already redacted by the driver), bounded honestly.

    The state, failure kind, message and exit code; the sha256 of the file read or written (what
    ``write_file`` takes as ``expected_sha256``); then the content — its head, since every reading tool
    already fits its result under its output cap and says how to read on — and each output stream's
    head and tail. A cut made here, or earlier (by the worker or the stored copy), is marked in the text
    with what it removed (:mod:`codeflux.domain.truncation`), and a stream's label says it was cut.
    """
    lines = [f"state: {record.state}"]
    if record.failure_kind:
        lines.append(f"failure: {record.failure_kind}")
    if record.message:
        lines.append(f"message: {record.message}")
    if record.exit_code is not None:
        lines.append(f"exit code: {record.exit_code}")
    if record.content_sha256:
        lines.append(f"{SHOWN_SHA256_LABEL}{record.content_sha256}")
    if record.content:
        content, cut = keep_head(record.content, _SHOWN_CONTENT_CHARS, hint="the result is longer than shown")
        label = "content (cut: its head is shown)" if cut or record.content_truncated else "content"
        lines.append(f"{label}:\n{content}")
    for name, text, truncated in (("stdout", record.stdout, record.stdout_truncated),
                                  ("stderr", record.stderr, record.stderr_truncated)):
        if text:
            shown, cut = keep_head_and_tail(text, _SHOWN_STREAM_CHARS)
            label = f"{name} (cut: its head and tail are shown)" if cut or truncated else name
            lines.append(f"{label}:\n{shown}")
    return "\n".join(lines)


# ─── the conversation kept in SQLite ─────────────────────────────────────────────────────────────────

_PART_CHARS: Final = 256 * 1024  # one text, reasoning or tool result part as stored
_ARGUMENT_CHARS: Final = 1024 * 1024  # one tool call's arguments as stored
_CUT_CHARS: Final = 1024  # what is left of a part when a whole message is still too large
_EVENT_TEXT_CHARS: Final = 4000  # what an agent-message event carries of the agent's words


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[codeflux: {len(text) - limit} characters not kept]"


def _redact_strings(value: object, redact: Redactor) -> object:
    if isinstance(value, str):
        return redact.redact(value)
    if isinstance(value, list):
        return [_redact_strings(item, redact) for item in value]
    if isinstance(value, dict):
        return {redact.redact(str(key)): _redact_strings(item, redact) for key, item in value.items()}
    return value


def _redacted_arguments(text: str, redact: Redactor) -> str:
    """Tool-call arguments with secrets hidden, still a JSON object when they were one."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return redact.redact(text)  # never valid JSON: redact it as text
    hidden = redact.redact(text)
    cleaned = _redact_strings(parsed, redact)
    if hidden == text and cleaned == parsed:
        return text
    dumped = json.dumps(cleaned, ensure_ascii=False)
    if redact.redact(dumped) == dumped:
        return dumped
    return json.dumps({"codeflux": f"{REDACTED}: the arguments held a secret and were not kept"})


def thinking_kept_unaltered(part: ReasoningPart, redact: Redactor | None = None) -> bool:
    """Whether ``part`` is stored exactly as it came: the redaction scan finds nothing in its text or its
    signature, and it fits the stored bound (cutting it would alter it too)."""
    chosen = redact or default_redactor()
    return (len(part.text) <= _PART_CHARS and chosen.redact(part.text) == part.text
            and chosen.redact(part.signature) == part.signature)


def _redacted_part(part: MessagePart, redact: Redactor) -> MessagePart | None:
    """``part`` as stored, or None when it is not kept (a thinking block that would have to be altered)."""
    if isinstance(part, TextPart):
        return TextPart(text=_cut(redact.redact(part.text), _PART_CHARS))
    if isinstance(part, ReasoningPart):
        return part if thinking_kept_unaltered(part, redact) else None
    if isinstance(part, ToolCall):
        arguments = _redacted_arguments(part.arguments_json, redact)
        if len(arguments) > _ARGUMENT_CHARS:
            arguments = "{}"
        return ToolCall(call_id=redact.redact(part.call_id), name=redact.redact(part.name), arguments_json=arguments)
    return ToolResult(call_id=redact.redact(part.call_id), content=_cut(redact.redact(part.content), _PART_CHARS),
                      is_error=part.is_error)


def stored_form(message: Message, redact: Redactor | None = None) -> tuple[Message, bool]:
    """``message`` as it is stored and resumed: redacted, each part bounded, the whole under the bound;
    and whether redaction hid anything."""
    chosen = redact or default_redactor()
    parts = [kept for part in message.parts if (kept := _redacted_part(part, chosen)) is not None]
    hidden = any(chosen.redact(_texts(part)) != _texts(part) for part in message.parts)
    if not parts:  # only thinking, none of it kept (the loop never stores such a turn)
        parts = [TextPart(text="[codeflux: a reasoning block was not kept]")]
    return Message(role=message.role, parts=_shrunk(message.role, parts)), hidden


def _shrunk(role: Role, parts: list[MessagePart]) -> tuple[MessagePart, ...]:
    """Cut the largest parts until the message fits the stored bound (a message of thousands of parts
    that still does not fit is replaced by a note saying so)."""
    shrunk = list(parts)
    for _ in range(2 * len(shrunk)):
        if _stored_size(role, shrunk) <= transcript_rows.MAX_MESSAGE_BYTES:
            return tuple(shrunk)
        index = max(range(len(shrunk)), key=lambda i: len(_texts(shrunk[i])))
        part = shrunk[index]
        if isinstance(part, ReasoningPart):
            if len(shrunk) > 1:
                del shrunk[index]  # thinking is kept whole or not at all, never cut
                continue
            shrunk[index] = TextPart(text="[codeflux: a reasoning block was not kept]")
        elif isinstance(part, ToolCall):
            shrunk[index] = replace(part, arguments_json="{}")
        elif isinstance(part, ToolResult):
            shrunk[index] = replace(part, content=_cut(part.content, _CUT_CHARS))
        else:
            shrunk[index] = replace(part, text=_cut(part.text, _CUT_CHARS))
    if _stored_size(role, shrunk) <= transcript_rows.MAX_MESSAGE_BYTES:
        return tuple(shrunk)
    return (TextPart(text=f"[codeflux: a message of {len(parts)} parts was too large to keep]"),)


def _stored_size(role: Role, parts: list[MessagePart]) -> int:
    return len(transcript_rows.message_to_json(Message(role=role, parts=tuple(parts))).encode())


def _texts(part: MessagePart) -> str:
    if isinstance(part, ToolCall):
        return part.call_id + part.name + part.arguments_json
    if isinstance(part, ToolResult):
        return part.call_id + part.content
    if isinstance(part, ReasoningPart):
        return part.text + part.signature
    return part.text


@dataclass(frozen=True, slots=True, kw_only=True)
class RestoredConversation:
    """The conversation an attempt of the loop works in: continued (as stored) or just opened."""

    conversation_id: int
    messages: tuple[Message, ...]
    steps_done: tuple[int, ...]
    last_turn_key: str | None
    """The key prefix the tool calls of the last message were submitted under, when it is an assistant turn."""
    continued: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationSummary:
    """What is kept of a task's newest conversation (for people: ``codeflux task resume`` says it)."""

    conversation_id: int
    plan_revision: int
    messages: int
    steps_done: tuple[int, ...]
    is_open: bool
    closed_reason: str | None


class LoopTranscript:
    """The conversation of one task's loop in SQLite (see the module docstring); writes through ``changes``."""

    def __init__(self, changes: TaskChanges, task_id: TaskId, *, redactor: Redactor | None = None) -> None:
        self._changes, self._task_id = changes, task_id
        self._redactor = redactor or default_redactor()
        self._conversation_id: int | None = None

    def begin(self, *, attempt: int, first_prompt: str, continue_open: bool) -> RestoredConversation:
        """Continue the task's open conversation when ``continue_open`` and it carries out the plan of the
        open ``attempt``; otherwise open a new one (closing the old) that starts with ``first_prompt``."""
        task_id = self._task_id

        def work(tx: Transaction) -> RestoredConversation:
            run = ledger_rows.require_run_attempt(tx, task_id, attempt)
            if not run.is_open:
                raise UsageError(f"task {task_id} attempt {attempt} has ended; the loop runs in an open attempt")
            latest = transcript_rows.latest_loop_conversation(tx, task_id)
            same_plan = latest is not None and (latest.plan_revision, latest.plan_sha256) == (
                run.plan_revision, run.plan_sha256)
            if continue_open and latest is not None and latest.is_open and same_plan:
                rows = transcript_rows.loop_messages_of(tx, latest.conversation_id)
                if rows:
                    last = rows[-1]
                    # an empty assistant turn an older codeflux stored is never sent again
                    kept = tuple(row.message for row in rows if not row.message.is_blank)
                    return RestoredConversation(
                        conversation_id=latest.conversation_id, messages=kept,
                        steps_done=last.steps_done, last_turn_key=last.turn_key, continued=True)
            at = self._changes.clock()
            superseded = ("a gate sent the work back: the next attempt starts a new conversation" if same_plan
                          else "the approved plan changed: a new conversation carries out the new revision")
            opened = transcript_rows.open_loop_conversation(
                tx, task_id=task_id, plan_revision=run.plan_revision, plan_sha256=run.plan_sha256, attempt=attempt,
                at_us=at, superseding_reason=superseded)
            first = Message.user_text(first_prompt)
            stored, hidden = stored_form(first, self._redactor)
            transcript_rows.append_loop_message(tx, conversation_id=opened.conversation_id, task_id=task_id,
                                                attempt=attempt, message=stored, turn_key=None, steps_done=(),
                                                redacted=hidden, at_us=at)
            return RestoredConversation(conversation_id=opened.conversation_id, messages=(first,), steps_done=(),
                                        last_turn_key=None, continued=False)

        restored = self._changes.db.write(work)
        self._conversation_id = restored.conversation_id
        return restored

    def record(self, message: Message, *, attempt: int, turn_key: str | None, steps_done: set[int]) -> None:
        """Append ``message`` (redacted and bounded here) with the steps done after it."""
        if self._conversation_id is None:
            raise UsageError("the conversation is recorded only after it began")
        conversation_id, task_id = self._conversation_id, self._task_id
        stored, hidden = stored_form(message, self._redactor)

        def work(tx: Transaction) -> None:
            transcript_rows.append_loop_message(
                tx, conversation_id=conversation_id, task_id=task_id, attempt=attempt, message=stored,
                turn_key=turn_key, steps_done=steps_done, redacted=hidden, at_us=self._changes.clock())
            said = _said_with_finish(stored) if stored.role is Role.ASSISTANT else ""
            if said:  # what the agent said, for the UI's timeline: already redacted and bounded
                session_id = require_task_record(tx, task_id).session_id
                append_event(tx, session_id=session_id, event=AgentMessage(
                    conversation_id=conversation_id, attempt=attempt, text=said[:_EVENT_TEXT_CHARS],
                    truncated=len(said) > _EVENT_TEXT_CHARS, redacted=hidden))

        self._changes.db.write(work)

    def compact(self, rewrite: Callable[[int, Message], Message], *, attempt: int,
                reason: str) -> tuple[Message, ...]:
        """Continue in a new conversation holding every message of this one as ``rewrite`` gives it (called
        with each message's index among the messages the loop sends, and the message as stored), each with
        the turn key and the steps done it had; this one is closed with ``reason`` — one transaction. Returns
        the messages as stored (redacted, bounded): what the loop sends from now on and what a resumed run
        restores. The messages are facts and never change: the originals stay in the closed conversation."""
        if self._conversation_id is None:
            raise UsageError("the conversation is compacted only after it began")
        current, task_id = self._conversation_id, self._task_id

        def work(tx: Transaction) -> tuple[int, tuple[Message, ...]]:
            run = ledger_rows.require_run_attempt(tx, task_id, attempt)
            kept = [row for row in transcript_rows.loop_messages_of(tx, current) if not row.message.is_blank]
            at = self._changes.clock()
            opened = transcript_rows.open_loop_conversation(
                tx, task_id=task_id, plan_revision=run.plan_revision, plan_sha256=run.plan_sha256, attempt=attempt,
                at_us=at, superseding_reason=reason)
            messages = []
            for index, row in enumerate(kept):
                stored, hidden = stored_form(rewrite(index, row.message), self._redactor)
                transcript_rows.append_loop_message(
                    tx, conversation_id=opened.conversation_id, task_id=task_id, attempt=attempt, message=stored,
                    turn_key=row.turn_key, steps_done=row.steps_done, redacted=hidden or row.redacted, at_us=at)
                messages.append(stored)
            return opened.conversation_id, tuple(messages)

        self._conversation_id, messages = self._changes.db.write(work)
        return messages

    def keeps_thinking(self, message: Message) -> bool:
        """Whether every thinking block of ``message`` would be stored unaltered (see the module docstring)."""
        return all(thinking_kept_unaltered(part, self._redactor) for part in message.parts
                   if isinstance(part, ReasoningPart))


def _said_with_finish(message: Message) -> str:
    """An assistant turn's words for the timeline: its text, and the summary of a ``finish`` call in it (the
    finish tool's report is otherwise only in the stored call's arguments)."""
    said = message.text.strip()
    for part in message.parts:
        if isinstance(part, ToolCall) and part.name == "finish":
            try:
                summary = json.loads(part.arguments_json).get("summary")
            except (ValueError, AttributeError):
                summary = None
            if isinstance(summary, str) and summary.strip():
                said = f"{said}\n\nfinish: {summary.strip()}".strip()
    return said


def close_conversation(changes: TaskChanges, task_id: TaskId, *, reason: str) -> bool:
    """Close the task's open conversation (the next run starts a new one); False when none was open."""
    return changes.db.write(lambda tx: transcript_rows.close_loop_conversation(
        tx, task_id=task_id, reason=reason, at_us=changes.clock())) is not None


def conversation_summary(changes: TaskChanges, task_id: TaskId) -> ConversationSummary | None:
    """The task's newest conversation in brief, or None before its first."""
    def read(view: ReadView) -> ConversationSummary | None:
        latest = transcript_rows.latest_loop_conversation(view, task_id)
        if latest is None:
            return None
        rows = transcript_rows.loop_messages_of(view, latest.conversation_id)
        return ConversationSummary(conversation_id=latest.conversation_id, plan_revision=latest.plan_revision,
                                   messages=len(rows), steps_done=rows[-1].steps_done if rows else (),
                                   is_open=latest.is_open, closed_reason=latest.closed_reason)

    return changes.db.read(read)
