"""Replies the loop cannot take as they are: empty, cut at the output bound, or carrying thinking that could
not be kept. Each is judged here; the loop (:meth:`ImplementationLoop._take_reply`) acts on the verdict.

* **Empty** (no tool call, no text but whitespace): never stored or sent back (both providers refuse an
  empty assistant turn, and a stored one would poison every resume). The model is asked to continue, in a
  new user message — as Anthropic's guide on empty ``end_turn`` replies advises, since re-sending the same
  conversation gets the same empty answer.
* **Cut at the output bound** (``max_tokens`` / ``length``, :attr:`ModelReply.cut_at_output_bound`): a tool
  call in it may be partial, so it is **never executed**: the turn is asked again with twice the output
  bound (up to the ceiling). A cut reply of text alone is kept, and the model is asked to go on from where
  it stopped.
* **Thinking that cannot be kept** in a turn with tool calls (an open tool cycle): its blocks must go back
  unaltered, and the redaction scan found something in them, so the turn is dropped and asked again.

Every re-ask counts as a round and is bounded: after ``max_turn_retries`` re-asks in a row the attempt ends
(``limit-reached``); an accepted reply resets the count and the output bound.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Final

from codeflux.domain.models import Message, ModelReply, Role

__all__ = ["CONTINUE_AFTER_CUT", "CONTINUE_AFTER_EMPTY", "ReplyVerdict", "judge_reply", "more_room"]

CONTINUE_AFTER_EMPTY: Final = (
    "Your last reply was empty. Continue with the task: call a tool for the next step, or answer when every "
    "step is done."
)
CONTINUE_AFTER_CUT: Final = (
    "Your last reply was cut at the output limit. Continue from where it stopped; keep each reply and each "
    "tool call small (edit_file rather than rewriting a whole file)."
)


class ReplyVerdict(StrEnum):
    TAKEN = "taken"  # store it and act on it
    EMPTY = "empty"  # not stored; the model is asked to continue
    CUT_TEXT = "cut-text"  # stored; the model is asked to go on
    NEEDS_MORE_ROOM = "needs-more-room"  # cut in a tool call or before a word: not stored or run; asked again
    THINKING_NOT_KEPT = "thinking-not-kept"  # not stored; the same turn is asked again


def judge_reply(reply: ModelReply, *, keeps_thinking: Callable[[Message], bool]) -> ReplyVerdict:
    """What the loop does with ``reply``; ``keeps_thinking`` says whether a turn's thinking would be stored
    unaltered (:meth:`LoopTranscript.keeps_thinking`)."""
    if reply.cut_at_output_bound:
        return ReplyVerdict.NEEDS_MORE_ROOM if reply.tool_calls or reply.is_blank else ReplyVerdict.CUT_TEXT
    if reply.is_blank:
        return ReplyVerdict.EMPTY
    if reply.tool_calls and not keeps_thinking(Message(role=Role.ASSISTANT, parts=reply.parts)):
        return ReplyVerdict.THINKING_NOT_KEPT
    return ReplyVerdict.TAKEN


def more_room(current: int, *, ceiling: int) -> int:
    """The output bound for asking a cut turn again: twice ``current``, at most ``ceiling`` (never less
    than ``current``)."""
    return max(current, min(current * 2, ceiling))
