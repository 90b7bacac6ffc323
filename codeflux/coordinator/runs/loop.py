"""The implementation loop: model turn → tool calls → authority → worker → results back to the model.

One :class:`ImplementationLoop` drives one run attempt of a ``running`` task (:meth:`ImplementationLoop.run`
shows the whole loop). Every model turn goes through the gateway; every tool call goes through the
tool driver, which records it, classifies it and lets the authority engine decide:

* an automatic or already allowed request executes in the task's worker, and its (redacted) result goes
  back to the model as the tool result;
* a refused or malformed request goes back as an error result — the model made a mistake, the loop
  goes on;
* a **pending** request pauses the task in ``awaiting-authority`` and the loop returns
  :attr:`LoopOutcomeKind.AWAITING_AUTHORITY`. After a decision, :meth:`ImplementationLoop.run` again
  continues where it stopped: an allowed request executes, a denied one becomes an error result.

Bounds (:class:`LoopLimits`): rounds, tool calls (in all and per turn), known tokens and wall time; a
bound reached ends the attempt (``limit-reached``). The task's state is read before every turn and before
every tool call, so a pause or a cancellation takes effect between turns — or between the tool calls of
one turn: a call not yet submitted is left for the resumed run, and a call already running finishes first.
A model call the gateway refuses or a provider fails ends the attempt as ``model-call-failed`` with the
error (the script of the scripted provider running out of turns is one); the conversation stays open.

The conversation is kept in SQLite (:class:`~codeflux.coordinator.runs.loop_steps.LoopTranscript`): every
message, redacted and bounded, with the plan steps done after it. A new loop for a task whose open
conversation carries out the same approved plan revision **continues** it — the next attempt after a
pause, a refused model call or a crash, in this process or another — with the steps already done; a
gate that sends the work back starts a new one (``continue_conversation=False``). When the stored
conversation ends in an assistant turn (the run stopped before answering it), that turn is answered
first: each of its tool calls is submitted again under the key it had, so a request already recorded is
found again and a request already executed returns its recorded execution — nothing runs twice. The
bounds count per attempt.

Before each call the request is measured against the model's context window; near it, older tool results
are compacted (a model-written summary through the gateway, else their heads), recorded as such, and a
provider's "too long" compacts and asks once more (:mod:`.context_window`).

A reply is stored before it is acted on, except one the loop cannot take as it is (:mod:`.reply_rules`): an
empty reply is never stored (the model is asked to continue), a reply cut at the output bound never runs
its tool calls (the turn is asked again with more room), and a turn whose thinking could not be stored
unaltered is asked again — each bounded by ``max_turn_retries`` re-asks in a row.

**Completion.** Only the ``finish`` tool ends the attempt (:mod:`.finish`): the model's summary and one
report per plan step (done / not needed, with the reason). Before it is accepted the loop runs the plan's
check commands (else the detected test command) as ``run_command`` requests through the driver; a red check
is the finish call's tool result in the same conversation, for at most ``max_finish_repairs`` repair turns,
after which the finish is accepted and the pipeline's gates decide. These repair turns never feed the stall
count. The plan's expected files are no completion rule (the step tracker still records which steps' files a
write touched, for the transcript); a turn without tool calls is answered by asking for ``finish``.

**What the model is told** (:mod:`.rules_prompt`): a system prompt with no task in it (a cacheable prefix),
the first prompt (ending with the repository's instruction files a person approved at exactly the content
the worktree holds, labelled as repository text that grants no authority — an unapproved or changed one is
not sent; a ``read_file`` or ``grep`` result showing an instruction file is labelled by the same approvals:
:mod:`~codeflux.coordinator.tasks.instruction_files`), then a user message listing the operations approved
for this task, repeated as a short update when that list changes; a refused request comes back as a short
error naming the capability blocked.

Read before write (:mod:`.shown_files`): a ``write_file`` without ``expected_sha256`` gets the sha256 this
conversation last showed for that file, so replacing a file the model read needs no hash, and one it never
read (or that changed since) is refused. Every failed tool call — by its tool, its target (path, or program)
and its failure kind (:mod:`.tool_failures`) — and every turn without a tool call (``no-finish``) is
fingerprinted; when one fingerprint
recurs ``stall_threshold`` times on the rung, the attempt stops as ``stalled`` with the ladder's decision
(climb, ask, exhausted).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Final

from codeflux.authority.decide import DecisionOutcome
from codeflux.coordinator.runs.context_window import Compaction, ContextKeeper
from codeflux.coordinator.runs.finish import (
    FINISH_SPEC,
    FINISH_TOOL_NAME,
    CheckRun,
    FinishProblem,
    FinishReport,
    accepted_reason,
    check_call,
    finish_check_result,
    finish_repairs_in,
    parse_finish,
    red_check_result,
    run_finish_check,
)
from codeflux.coordinator.runs.loop_steps import (
    WRITING_TOOLS,
    LoopTranscript,
    StepTracker,
    describe_execution,
    execution_failed,
    paths_written,
)
from codeflux.coordinator.runs.reply_rules import (
    CONTINUE_AFTER_CUT,
    CONTINUE_AFTER_EMPTY,
    ReplyVerdict,
    judge_reply,
    more_room,
)
from codeflux.coordinator.runs.rules_prompt import (
    SYSTEM_PROMPT,
    ApprovedOperations,
    command_text,
    denial_text,
    listing_of,
    read_approved_operations,
    rules_message,
    rules_update,
    sent_listing,
)
from codeflux.coordinator.runs.shown_files import ShownFiles
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.runs.tool_failures import tool_failure_fingerprint
from codeflux.coordinator.spending.gateway import GatewayReply, ModelGateway
from codeflux.coordinator.tasks.checkpoints import MATERIAL_EDIT_TOOLS, CheckpointService, CheckpointTrigger
from codeflux.coordinator.tasks.instruction_files import InstructionApprovals
from codeflux.coordinator.tasks.service import Actor, TaskService
from codeflux.coordinator.tool_calls import ExecutionRecord
from codeflux.domain.errors import (
    ApprovalRequiredError,
    AuthorityRefusedError,
    CodefluxError,
    ConflictError,
    ContextTooLongError,
    CredentialNotFoundError,
    CredentialStoreUnavailableError,
    DecisionNeededError,
    ModelCallRefusedError,
    ProviderError,
    SecretLeakError,
    ToolFailedError,
    ToolRequestInvalidError,
    TransitionNotAllowedError,
    UsageError,
)
from codeflux.domain.execution import FailureKind as ExecutionFailureKind
from codeflux.domain.ids import TaskId
from codeflux.domain.instructions import instructions_listing, instructions_update, sent_instructions_listing
from codeflux.domain.ladder import (
    FailureFingerprint,
    FailureKind,
    LadderDecision,
    LadderPosition,
    LadderStep,
    fingerprint_failure,
)
from codeflux.domain.models import Message, ModelReply, ModelRequest, Role, ToolCall, ToolResult, tool_specs_for
from codeflux.domain.plans import Plan
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import TOOL_CATALOG
from codeflux.store.loop_transcripts import MAX_CONVERSATION_MESSAGES

__all__ = ["ImplementationLoop", "LoopLimits", "LoopOutcome", "LoopOutcomeKind"]

_TOOLS: Final = (*tool_specs_for(TOOL_CATALOG.values()), FINISH_SPEC)
_SYSTEM: Final = SYSTEM_PROMPT
FINISH_NUDGE: Final = (
    "An answer without a tool call does not end the task. If the work is done and verified, call the finish "
    "tool (a summary and one report per plan step); otherwise go on with the tools.")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopLimits:
    """Bounds of one attempt of the implementation loop."""

    max_rounds: int = 16
    """Model turns in the attempt."""
    max_tool_calls: int = 60
    """Tool calls in the attempt, all turns together."""
    max_tool_calls_per_turn: int = 6
    """Tool calls one turn may make; the rest are answered with an error result."""
    max_tokens: int = 600_000
    """Known tokens (input + output) reported by the provider; unknown usage is counted as unknown, not 0."""
    max_wall_seconds: float = 720.0
    """Wall time of the attempt, measured from the first turn. Time the attempt spends waiting for a person's
    decision (from returning ``awaiting-authority`` until it runs again) is not the agent's time and does
    not count."""
    max_output_tokens: int = 8192
    """The output bound sent with each model request."""
    max_output_tokens_ceiling: int = 16_384
    """The most a turn cut at the output bound is asked again with (the bound doubles per re-ask). 16,384 is
    the smallest maximum output of the models codeflux ships prices for (gpt-4o)."""
    max_turn_retries: int = 2
    """Re-asks of one turn in a row — after an empty reply, a reply cut at the output bound, or thinking
    that could not be kept (:mod:`.reply_rules`) — before the attempt ends."""
    max_repairs_per_rung: int = 3
    """Attempts a gate may send back on one rung of the ladder (a stall climbs before that; with rungs × this
    in total the task waits for the person with its red evidence)."""
    max_finish_repairs: int = 3
    """Finish calls answered with a red check in one conversation (:mod:`.finish`); the next finish is
    accepted as it is and the pipeline's gates decide. These repair turns never feed the stall count."""
    compact_at_percent: int = 75
    """Older tool results are compacted before a call whose estimated request (input plus output bound) passes
    this share of the model's context window (:mod:`.context_window`)."""
    keep_recent_messages: int = 4
    """The last messages a compaction keeps whole (with the first message and every message without tool
    results)."""
    compaction_summary_tokens: int = 1024
    """The output bound of the model call that summarizes the compacted tool results."""

    def __post_init__(self) -> None:
        if min(self.max_rounds, self.max_tool_calls, self.max_tool_calls_per_turn, self.max_tokens,
               self.max_output_tokens, self.max_repairs_per_rung) < 1 or self.max_wall_seconds <= 0:
            raise UsageError("every loop limit must be positive")
        if min(self.max_turn_retries, self.max_finish_repairs) < 0 \
                or self.max_output_tokens_ceiling < self.max_output_tokens:
            raise UsageError("turn re-asks cannot be negative, nor the output ceiling below the output bound")
        if not 1 <= self.compact_at_percent <= 100 or min(self.keep_recent_messages,
                                                           self.compaction_summary_tokens) < 1:
            raise UsageError("compaction starts at 1 to 100 % of the window, keeps at least one recent message "
                             "and gives its summary at least one token")


class LoopOutcomeKind(StrEnum):
    """How an attempt of the loop ended (a fact, not evidence of correctness)."""

    IMPLEMENTATION_COMPLETE = "implementation-complete"
    AWAITING_AUTHORITY = "awaiting-authority"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    STOPPED = "stopped"  # the task left running some other way (recovery, failure)
    LIMIT_REACHED = "limit-reached"
    STALLED = "stalled"
    MODEL_CALL_FAILED = "model-call-failed"  # the gateway refused the call or the provider failed: ``error``
    WORKER_UNAVAILABLE = "worker-unavailable"  # a tool call found no worker to run in (nothing ran): ``reason``


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopOutcome:
    kind: LoopOutcomeKind
    reason: str
    rounds: int
    tool_calls: int
    tokens: int
    unknown_usage_turns: int
    steps_done: tuple[str, ...]
    steps_pending: tuple[str, ...]
    position: LadderPosition
    pending_request_id: str | None = None
    pending_call: ToolCall | None = None
    ladder_step: LadderStep | None = None
    error: CodefluxError | None = None
    """Why a model call failed (``model-call-failed``): a provider error or a refusal needing a decision."""
    continued_conversation: bool = False
    """This attempt continued a stored conversation instead of starting one."""

    @property
    def awaiting_authority(self) -> bool:
        return self.kind is LoopOutcomeKind.AWAITING_AUTHORITY


@dataclass(slots=True)
class _Pending:
    request_id: str
    call: ToolCall
    remaining: list[ToolCall]
    results: list[ToolResult]
    turn_key: str
    replaying: bool
    finish: _FinishInProgress | None = None
    """Set when the request waiting is a check of a finish call (:mod:`.finish`)."""


@dataclass(slots=True)
class _FinishInProgress:
    """A valid finish call whose checks are being run."""

    call: ToolCall
    report: FinishReport
    checks: list[tuple[str, tuple[str, ...]]]
    runs: list[CheckRun]
    results: list[ToolResult]
    turn_key: str
    replaying: bool


@dataclass(slots=True)
class _Counters:
    rounds: int = 0
    tool_calls: int = 0
    tokens: int = 0
    unknown_usage_turns: int = 0
    started: float | None = None
    waiting_since: float | None = None  # returned awaiting a person's decision at this clock reading
    waited: float = 0.0  # seconds spent waiting for decisions, not counted against the wall bound
    stall: LadderStep | None = None
    worker_unavailable: str | None = None  # why a tool call just found no worker (it ends the attempt)
    pending: _Pending | None = None
    messages: list[Message] = field(default_factory=list)
    loaded: bool = False
    continued: bool = False
    unanswered: tuple[Message, str] | None = None  # a stored assistant turn (and its key) still to answer
    re_asks: int = 0  # re-asks of the current turn in a row (.reply_rules)
    output_room: int | None = None  # the output bound of the next call when a cut turn is asked again
    finish_repairs: int = 0  # finish calls answered with a red check in this conversation (.finish)
    rules_sent: tuple[str, ...] | None = None  # the approved operations last told to the model (.rules_prompt)
    instructions_sent: tuple[tuple[str, str], ...] | None = None  # approved instruction files last told


class ImplementationLoop:
    """One attempt of the loop for ``task_id`` (see the module docstring).

    ``continue_conversation`` (default): continue the task's open conversation when it carries out the
    attempt's plan (``requirement`` then goes unused: the stored conversation already begins with it);
    False: start a new conversation, closing the old one (a gate sent the work back).
    """

    def __init__(
        self, task_id: TaskId, *, attempt: int, requirement: str, plan: Plan, gateway: ModelGateway,
        driver: ToolDriver, tasks: TaskService, position: LadderPosition, limits: LoopLimits,
        provider: str | None = None, clock: Callable[[], float] = time.monotonic, continue_conversation: bool = True,
        finish_checks: tuple[tuple[str, tuple[str, ...]], ...] = (), headless: bool = False,
        preapproved: tuple[str, ...] = (), instructions: InstructionApprovals | None = None,
        memory: str | None = None,
    ) -> None:  # fmt: skip
        self._task_id, self._attempt = task_id, attempt
        self._instructions = instructions
        self._key = f"loop:{task_id.value}:{attempt}"
        self._gateway, self._driver, self._tasks = gateway, driver, tasks
        self._position, self._limits, self._provider, self._clock = position, limits, provider, clock
        self._steps = StepTracker(plan=plan)
        self._checkpoints = CheckpointService(tasks.changes)
        self._transcript = LoopTranscript(tasks.changes, task_id)
        approved = None if instructions is None else instructions.context_block()
        self._first_prompt = (_first_prompt(requirement, plan) + ("" if approved is None else f"\n\n{approved}")
                              + ("" if memory is None else f"\n\n{memory}"))
        self._continue = continue_conversation
        self._state = _Counters()
        self._shown = ShownFiles()
        self._finish_checks = finish_checks
        self._headless, self._preapproved = headless, preapproved
        self._context = ContextKeeper(task_id=task_id, attempt=attempt, gateway=gateway, transcript=self._transcript,
                                      provider=provider, compact_at_percent=limits.compact_at_percent,
                                      keep_recent_messages=limits.keep_recent_messages,
                                      summary_tokens=limits.compaction_summary_tokens)

    @property
    def position(self) -> LadderPosition:
        return self._position

    def run(self) -> LoopOutcome:
        """Run (or continue) the attempt until it completes, waits, stops or reaches a bound."""
        if self._state.started is None:
            self._state.started = self._clock()
        if self._state.waiting_since is not None:  # back from a person's decision: that time was theirs
            self._state.waited += max(0.0, self._clock() - self._state.waiting_since)
            self._state.waiting_since = None
        if not self._state.loaded:
            self._begin_conversation()
        if self._state.pending is not None and (stop := self._resume_pending()) is not None:
            return stop
        if self._state.unanswered is not None and (stop := self._answer_stored_turn()) is not None:
            return stop
        while True:
            if (stop := self._stop_before_turn()) is not None:
                return stop
            self._refresh_rules()
            turn = self._model_turn()
            if isinstance(turn, LoopOutcome):
                return turn
            if turn is None:  # the reply could not be taken as it was; the turn is asked again
                continue
            reply, turn_key = turn
            if (stop := self._after_reply(reply.tool_calls, turn_key)) is not None:
                return stop

    def _begin_conversation(self) -> None:
        restored = self._transcript.begin(attempt=self._attempt, first_prompt=self._first_prompt,
                                          continue_open=self._continue)
        state = self._state
        state.messages, state.loaded, state.continued = list(restored.messages), True, restored.continued
        self._steps.restore(restored.steps_done)
        self._shown.restore(restored.messages)
        state.finish_repairs = finish_repairs_in(restored.messages)
        state.rules_sent = sent_listing(restored.messages)
        last = restored.messages[-1]
        if restored.continued and last.role is Role.ASSISTANT and restored.last_turn_key is not None:
            state.unanswered = (last, restored.last_turn_key)

    def _answer_stored_turn(self) -> LoopOutcome | None:
        """The stored conversation ends in an assistant turn the run stopped before answering: answer it."""
        if self._state.unanswered is None:
            return None
        message, turn_key = self._state.unanswered
        self._state.unanswered = None
        calls = tuple(part for part in message.parts if isinstance(part, ToolCall))
        return self._after_reply(calls, turn_key, replaying=True)

    def _after_reply(self, calls: tuple[ToolCall, ...], turn_key: str, *,
                     replaying: bool = False) -> LoopOutcome | None:
        if calls:
            return self._run_calls(list(calls), [], turn_key, replaying=replaying)
        return self._on_no_tool_calls()

    def _append(self, message: Message, *, turn_key: str | None = None) -> None:
        """Add ``message`` to the conversation, in memory and (redacted, bounded) in SQLite."""
        self._state.messages.append(message)
        self._transcript.record(message, attempt=self._attempt, turn_key=turn_key, steps_done=self._steps.done)

    # ─── one turn ────────────────────────────────────────────────────────────────────────────────

    def _model_turn(self) -> tuple[ModelReply, str] | LoopOutcome | None:
        state = self._state
        state.rounds += 1
        turn_key = f"{self._key}:turn-{state.rounds}"
        request = ModelRequest(model="chosen-by-the-rung", system=_SYSTEM, messages=tuple(state.messages),
                               tools=_TOOLS, max_output_tokens=state.output_room or self._limits.max_output_tokens)
        if (compaction := self._context.keep_within(request, position=self._position, turn_key=turn_key)) is not None:
            request = self._compacted(request, compaction)
        try:
            answer = self._call_model(request, turn_key)
        except ModelCallRefusedError:
            # the task left running meanwhile (a pause, a cancellation): stop as its state says
            task = self._tasks.show(self._task_id).task
            return self._stop_for_state(task.state) or self._outcome(
                LoopOutcomeKind.STOPPED, f"the model call was refused while the task was {task.state}")
        except (ProviderError, DecisionNeededError, CredentialNotFoundError, CredentialStoreUnavailableError) as error:
            return self._outcome(LoopOutcomeKind.MODEL_CALL_FAILED, f"the model call failed: {error}", error=error)
        self._count(answer.reply.usage)
        return self._take_reply(answer.reply, turn_key)

    def _count(self, usage: TokenUsage) -> None:
        state = self._state
        if usage.input_tokens is None or usage.output_tokens is None:
            state.unknown_usage_turns += 1
        state.tokens += (usage.input_tokens or 0) + (usage.output_tokens or 0)

    # ─── the context window (.context_window) ──────────────────────────────────────────────────────

    def _call_model(self, request: ModelRequest, turn_key: str) -> GatewayReply:
        """Call the model; a "too long" refusal compacts the conversation and asks once more."""
        more_room = self._state.output_room is not None  # a turn cut at its bound, asked again
        try:
            return self._gateway.call(self._task_id, request, position=self._position, provider=self._provider,
                                      idempotency_key=turn_key, more_room=more_room)
        except ContextTooLongError:
            compaction = self._context.after_too_long(request, position=self._position, turn_key=turn_key)
            if compaction is None:
                raise
            return self._gateway.call(self._task_id, self._compacted(request, compaction), position=self._position,
                                      provider=self._provider, idempotency_key=f"{turn_key}:after-compaction",
                                      more_room=more_room)

    def _compacted(self, request: ModelRequest, compaction: Compaction) -> ModelRequest:
        """Go on with the compacted conversation (already recorded); count its summary call's tokens."""
        self._state.messages = list(compaction.messages)
        if compaction.usage is not None:
            self._count(compaction.usage)
        return replace(request, messages=compaction.messages)

    # ─── replies that cannot be taken as they are (.reply_rules) ──────────────────────────────────

    def _take_reply(self, reply: ModelReply, turn_key: str) -> tuple[ModelReply, str] | LoopOutcome | None:
        """Store ``reply`` and return it to act on; or, for an empty reply, one cut at the output bound, or
        one whose thinking cannot be kept, act as :mod:`.reply_rules` says and return None (ask again) —
        or the outcome that ends the attempt when the re-asks run out."""
        state = self._state
        verdict = judge_reply(reply, keeps_thinking=self._transcript.keeps_thinking)
        if verdict is ReplyVerdict.TAKEN:
            state.re_asks, state.output_room = 0, None
            self._append(reply.as_message(), turn_key=turn_key)
            return reply, turn_key
        if state.re_asks >= self._limits.max_turn_retries:
            return self._outcome(LoopOutcomeKind.LIMIT_REACHED, _RE_ASKS_RAN_OUT[verdict].format(
                n=state.re_asks + 1, bound=state.output_room or self._limits.max_output_tokens))
        state.re_asks += 1
        if verdict is ReplyVerdict.EMPTY:
            self._append(Message.user_text(CONTINUE_AFTER_EMPTY))
        elif verdict is ReplyVerdict.CUT_TEXT:
            self._append(reply.as_message(), turn_key=turn_key)
            self._append(Message.user_text(CONTINUE_AFTER_CUT))
        elif verdict is ReplyVerdict.NEEDS_MORE_ROOM:
            state.output_room = more_room(state.output_room or self._limits.max_output_tokens,
                                          ceiling=self._limits.max_output_tokens_ceiling)
        return None  # THINKING_NOT_KEPT: the same conversation is asked again

    def _run_calls(self, calls: list[ToolCall], results: list[ToolResult], turn_key: str, *,
                   replaying: bool = False) -> LoopOutcome | None:
        while calls:
            if (stop := self._stop_for_state(self._tasks.show(self._task_id).task.state)) is not None:
                return stop  # the calls not yet submitted are answered by the resumed run
            call = calls.pop(0)
            if call.name == FINISH_TOOL_NAME:
                self._state.tool_calls += 1
                return self._finish(call, calls, results, turn_key, replaying=replaying)
            if len(results) >= self._limits.max_tool_calls_per_turn:
                results.append(ToolResult(call_id=call.call_id, is_error=True,
                                          content="refused: too many tool calls in one turn; ask again next turn"))
                continue
            self._state.tool_calls += 1
            result = self._tool_call(call, turn_key, replaying=replaying)
            if isinstance(result, str):  # a request id waiting for a decision
                self._state.pending = _Pending(request_id=result, call=call, remaining=calls, results=results,
                                               turn_key=turn_key, replaying=replaying)
                return self._await_authority(result, call)
            results.append(result)
            if (unavailable := self._state.worker_unavailable) is not None:
                # Nothing the model does can bring a worker up: the attempt ends on the cause, and the next turn
                # is not asked for (a scripted run would otherwise end "no turn left", hiding it).
                self._state.worker_unavailable = None
                return self._outcome(LoopOutcomeKind.WORKER_UNAVAILABLE, unavailable)
            if self._state.stall is not None:
                return self._outcome(LoopOutcomeKind.STALLED, "the same failure recurred on this rung",
                                     ladder_step=self._state.stall)
        self._append(Message(role=Role.USER, parts=tuple(results)))
        return None

    def _tool_call(self, call: ToolCall, turn_key: str, *, replaying: bool = False) -> ToolResult | str:
        try:
            arguments = self._shown.fill(call.name, call.arguments())
            # A fresh call whose first decision allows it commits its intent with the request (one
            # commit fewer); a replayed call keeps the separate intent so that a result recorded before
            # the interruption is found first.
            submitted = self._driver.submit_tool_request(self._task_id, call.name, arguments, source="model",
                                                         idempotency_key=f"{turn_key}:{call.call_id}",
                                                         intend_if_allowed=not replaying)
        except (UsageError, ToolFailedError, SecretLeakError) as error:
            return self._failed(call, f"refused: {error}")
        except ConflictError as error:
            if not replaying:
                raise
            return self._failed(call, f"the interrupted call does not match its recorded request: {error}")
        outcome = submitted.outcome
        if outcome is DecisionOutcome.PENDING:
            return submitted.request_id
        if outcome in (DecisionOutcome.DENIED, DecisionOutcome.REFUSED_DENIED_CAPABILITY,
                       DecisionOutcome.REFUSED_INACTIVE_TASK):
            return self._failed(call, denial_text(submitted.decision, operation=_operation_of(call)))
        return self._execute(call, submitted.request_id, arguments, replaying=replaying)

    def _execute(self, call: ToolCall, request_id: str, arguments: dict[str, object], *,
                 replaying: bool = False) -> ToolResult:
        try:
            recorded = self._driver.read_result(request_id) if replaying else None
            record = recorded or self._driver.execute(request_id)
        except AuthorityRefusedError as error:
            return self._failed(call, f"refused: {error}")
        self._shown.note(call.name, arguments, record)
        text = describe_execution(record)
        if recorded is None and record.failure_kind is ExecutionFailureKind.WORKER_UNAVAILABLE:
            self._state.worker_unavailable = (f"worker-unavailable: {call.name} could not run, nothing ran "
                                              f"({record.message or 'the worker is unavailable'})")
        if execution_failed(record):
            return self._failed(call, text, record)
        if self._instructions is not None:  # the approval decides whether it is presented as instructions
            text = self._instructions.label_result(call.name, arguments, content=record.content or "",
                                                   content_sha256=record.content_sha256) + text
        if call.name in WRITING_TOOLS:
            self._steps.record_write(paths_written(call.name, arguments))
        if call.name in MATERIAL_EDIT_TOOLS and recorded is None:
            self._checkpoints.capture_checkpoint(self._task_id, CheckpointTrigger.MATERIAL_EDIT)
        return ToolResult(call_id=call.call_id, content=text)

    def _failed(self, call: ToolCall, text: str, record: ExecutionRecord | None = None) -> ToolResult:
        self._note_failure(tool_failure_fingerprint(call, text, record))  # the tool, its target, the kind
        return ToolResult(call_id=call.call_id, content=text, is_error=True)

    def _on_no_tool_calls(self) -> LoopOutcome | None:
        """A turn without tool calls is not "done": the model is told to call finish. The nudges are
        fingerprinted (``no-finish``), so a model that keeps answering without tools stalls."""
        self._record_failure_fingerprint("no-finish", FINISH_NUDGE)
        if self._state.stall is not None:
            return self._outcome(LoopOutcomeKind.STALLED, "the model kept answering without calling finish",
                                 ladder_step=self._state.stall)
        self._append(Message.user_text(FINISH_NUDGE))
        return None

    # ─── finishing (.finish) ─────────────────────────────────────────────────────────────────────

    def _finish(self, call: ToolCall, rest: list[ToolCall], results: list[ToolResult], turn_key: str, *,
                replaying: bool) -> LoopOutcome | None:
        """A finish call: refuse the calls after it, validate it, then run the checks before accepting it."""
        for later in rest:
            results.append(ToolResult(call_id=later.call_id, is_error=True,
                                      content="refused: not run; finish must be the last tool call of a turn"))
        rest.clear()
        try:
            parsed: FinishReport | FinishProblem = parse_finish(call.arguments(), self._steps.plan)
        except ToolRequestInvalidError as error:
            parsed = FinishProblem(text=f"refused: finish was not accepted: {error}")
        if isinstance(parsed, FinishProblem):
            results.append(self._failed(call, parsed.text))
            self._append(Message(role=Role.USER, parts=tuple(results)))
            return None
        progress = _FinishInProgress(call=call, report=parsed, checks=list(self._finish_checks), runs=[],
                                     results=results, turn_key=turn_key, replaying=replaying)
        return self._run_finish_checks(progress)

    def _run_finish_checks(self, progress: _FinishInProgress) -> LoopOutcome | None:
        while len(progress.runs) < len(progress.checks):
            if (stop := self._stop_for_state(self._tasks.show(self._task_id).task.state)) is not None:
                return stop  # a resumed run answers the stored finish turn again: its checks are found again
            index = len(progress.runs)
            name, argv = progress.checks[index]
            ran = run_finish_check(self._driver, self._task_id, name=name, argv=argv,
                                   key=f"{progress.turn_key}:{progress.call.call_id}:check-{index + 1}",
                                   replaying=progress.replaying)
            if isinstance(ran, str):  # waits for a person's (or the headless policy's) decision
                pending_call = check_call(progress.call, index + 1, argv)
                self._state.pending = _Pending(request_id=ran, call=pending_call, remaining=[],
                                               results=progress.results, turn_key=progress.turn_key,
                                               replaying=progress.replaying, finish=progress)
                return self._await_authority(ran, pending_call)
            progress.runs.append(ran)
        return self._conclude_finish(progress)

    def _conclude_finish(self, progress: _FinishInProgress) -> LoopOutcome | None:
        """Every check ran (or could not): accept the finish, or give the red ones back for a repair."""
        state, bound = self._state, self._limits.max_finish_repairs
        red = [run for run in progress.runs if run.ran and not run.passed]
        if red and state.finish_repairs < bound:
            state.finish_repairs += 1  # never a failure fingerprint: repair turns do not feed the stall count
            progress.results.append(red_check_result(progress.call, red, repair=state.finish_repairs, bound=bound))
            self._append(Message(role=Role.USER, parts=tuple(progress.results)))
            return None
        return self._outcome(LoopOutcomeKind.IMPLEMENTATION_COMPLETE, accepted_reason(
            progress.report, self._steps.plan, progress.runs, repairs_used_up=bool(red)))

    # ─── what the model is told about its rules (.rules_prompt) ──────────────────────────────────

    def _approved_operations(self) -> ApprovedOperations:
        return read_approved_operations(
            self._tasks.changes.db, self._task_id, finish_checks=[argv for _, argv in self._finish_checks],
            unconfined=self._driver.programs_unconfined, headless=self._headless, preapproved=self._preapproved)

    def _refresh_instructions(self) -> None:
        """Tell the model when the approved instruction files changed since the conversation last said (an
        approval revoked or given, a file edited — by anyone — away from its approved content)."""
        if self._instructions is None:
            return
        approved = self._instructions.approved_texts()
        listing = instructions_listing(approved)
        state = self._state
        if state.instructions_sent is None:
            state.instructions_sent = sent_instructions_listing(
                message.text for message in state.messages if message.role is Role.USER)
        if listing != state.instructions_sent:
            self._append(Message.user_text(instructions_update(approved)))
            state.instructions_sent = listing

    def _refresh_rules(self) -> None:
        """Tell the model the approved operations after the first prompt, and again when they changed."""
        self._refresh_instructions()
        approved = self._approved_operations()
        listing = listing_of(approved)
        state = self._state
        if state.rules_sent is None:
            self._append(Message.user_text(rules_message(approved)))
        elif state.rules_sent != listing:
            self._append(Message.user_text(rules_update(approved)))
        state.rules_sent = listing

    def _record_failure_fingerprint(self, gate: str, text: str) -> None:
        self._note_failure(fingerprint_failure(gate=gate, output=text))

    def _note_failure(self, fingerprint: FailureFingerprint) -> None:
        self._position, step = self._position.record(FailureKind.CHECK, fingerprint)
        if step.decision is not LadderDecision.STAY:
            self._state.stall = step

    # ─── pausing, resuming and stopping ──────────────────────────────────────────────────────────

    def _await_authority(self, request_id: str, call: ToolCall) -> LoopOutcome:
        task = self._tasks.show(self._task_id).task
        if task.state is TaskState.RUNNING:
            try:
                self._tasks.transition(self._task_id, TaskState.AWAITING_AUTHORITY, expected_revision=task.revision,
                                       reason=f"tool request {request_id} waits for a decision", actor=Actor.SYSTEM,
                                       idempotency_key=f"{self._key}:await:{request_id}")
                self._state.waiting_since = self._clock()
                return self._outcome(LoopOutcomeKind.AWAITING_AUTHORITY,
                                     f"tool request {request_id} waits for a decision",
                                     pending_request_id=request_id, pending_call=call)
            except (ConflictError, TransitionNotAllowedError):
                task = self._tasks.show(self._task_id).task
        # paused or cancelled meanwhile: the request stays pending; a resumed run finds it again
        return self._stop_for_state(task.state) or self._outcome(LoopOutcomeKind.STOPPED, f"the task is {task.state}")

    def _resume_pending(self) -> LoopOutcome | None:
        pending = self._state.pending
        if pending is None:
            return None
        request = self._driver.read_request(pending.request_id)
        if request.outcome is DecisionOutcome.PENDING:
            raise ApprovalRequiredError(request_id=pending.request_id,
                                        needs=tuple(str(need.need) for need in request.needs))
        task = self._tasks.show(self._task_id).task
        if task.state is TaskState.AWAITING_AUTHORITY:
            try:
                self._tasks.transition(self._task_id, TaskState.RUNNING, expected_revision=task.revision,
                                       actor=Actor.SYSTEM, reason=f"tool request {pending.request_id} was decided",
                                       idempotency_key=f"{self._key}:resume:{pending.request_id}")
            except (ConflictError, TransitionNotAllowedError):  # paused or cancelled meanwhile
                task = self._tasks.show(self._task_id).task
                if (stop := self._stop_for_state(task.state)) is not None:
                    return stop
        elif (stop := self._stop_for_state(task.state)) is not None:
            return stop
        self._state.pending = None
        if pending.finish is not None:  # a check of a finish call was decided: run it, go on with the others
            name, argv = pending.finish.checks[len(pending.finish.runs)]
            pending.finish.runs.append(finish_check_result(self._driver, name=name, argv=argv,
                                                           request_id=pending.request_id, decision=request.decision,
                                                           replaying=False))
            return self._run_finish_checks(pending.finish)
        if request.outcome in (DecisionOutcome.ALLOWED_ONCE, DecisionOutcome.ALLOWED_FOR_TASK):
            self._checkpoints.capture_checkpoint(self._task_id, CheckpointTrigger.BEFORE_RISKY_ACTION)
            result = self._execute(pending.call, pending.request_id, pending.call.arguments())
        else:
            result = self._failed(pending.call, denial_text(request.decision, operation=_operation_of(pending.call)))
        pending.results.append(result)
        if self._state.stall is not None:
            return self._outcome(LoopOutcomeKind.STALLED, "the same failure recurred on this rung",
                                 ladder_step=self._state.stall)
        return self._run_calls(pending.remaining, pending.results, pending.turn_key, replaying=pending.replaying)

    def _stop_for_state(self, state: TaskState) -> LoopOutcome | None:
        if state is TaskState.RUNNING:
            return None
        if state is TaskState.PAUSED:
            return self._outcome(LoopOutcomeKind.PAUSED, "the task was paused")
        if state is TaskState.CANCELLED:
            return self._outcome(LoopOutcomeKind.CANCELLED, "the task was cancelled")
        return self._outcome(LoopOutcomeKind.STOPPED, f"the task is {state}")

    def _stop_before_turn(self) -> LoopOutcome | None:
        if (stop := self._stop_for_state(self._tasks.show(self._task_id).task.state)) is not None:
            return stop
        state, limits = self._state, self._limits
        if len(state.messages) > MAX_CONVERSATION_MESSAGES - 2:
            return self._outcome(LoopOutcomeKind.LIMIT_REACHED,
                                 f"the conversation reached its bound of {MAX_CONVERSATION_MESSAGES} messages")
        elapsed = self._clock() - (state.started or self._clock()) - state.waited
        for reached, what in ((state.rounds >= limits.max_rounds, f"{limits.max_rounds} rounds"),
                              (state.tool_calls >= limits.max_tool_calls, f"{limits.max_tool_calls} tool calls"),
                              (state.tokens >= limits.max_tokens, f"{limits.max_tokens} tokens"),
                              (elapsed >= limits.max_wall_seconds, f"{limits.max_wall_seconds:g} seconds")):
            if reached:
                return self._outcome(LoopOutcomeKind.LIMIT_REACHED, f"the attempt reached its bound of {what}")
        return None

    def _outcome(self, kind: LoopOutcomeKind, reason: str, *, pending_request_id: str | None = None,
                 pending_call: ToolCall | None = None, ladder_step: LadderStep | None = None,
                 error: CodefluxError | None = None) -> LoopOutcome:
        state = self._state
        return LoopOutcome(kind=kind, reason=reason, rounds=state.rounds, tool_calls=state.tool_calls,
                           tokens=state.tokens, unknown_usage_turns=state.unknown_usage_turns,
                           steps_done=self._steps.done_titles, steps_pending=self._steps.pending_titles,
                           position=self._position, pending_request_id=pending_request_id, pending_call=pending_call,
                           ladder_step=ladder_step, error=error, continued_conversation=state.continued)


_RE_ASKS_RAN_OUT: Final = {
    ReplyVerdict.EMPTY: "the model's reply was empty {n} times in a row",
    ReplyVerdict.CUT_TEXT: "the model's reply was cut at the output bound ({bound} tokens) {n} times in a row",
    ReplyVerdict.NEEDS_MORE_ROOM: "the model's reply was cut at the output bound ({bound} tokens) {n} times in a "
                                  "row; its cut tool calls were not run",
    ReplyVerdict.THINKING_NOT_KEPT: "the model's thinking held text the redaction scan hides {n} times in a row; "
                                    "it cannot be stored unaltered, so those turns were dropped",
}


def _operation_of(call: ToolCall) -> str | None:
    """A refused ``run_command`` call's argv on one line (what the model is told was refused)."""
    if call.name != "run_command":
        return None
    try:
        argv = call.arguments().get("argv")
    except ToolRequestInvalidError:
        return None
    return command_text([str(word) for word in argv]) if isinstance(argv, list) and argv else None


def _first_prompt(requirement: str, plan: Plan) -> str:
    steps = "\n".join(f"{index}. {step.title}: {step.detail}"
                      + (f" (likely files, the planner's guess: {', '.join(step.expected_files)})"
                         if step.expected_files else "")
                      for index, step in enumerate(plan.steps, start=1))
    prompt = f"Requirement:\n{requirement}\n\nApproved plan ({plan.scope.summary}):\n{steps}"
    settled = [f"- {q.question} Answer from the person: {q.answer}" if q.answer is not None
               else f"- {q.question} Assumed (no one was asked): {q.assumption}"
               for q in plan.questions if not q.open]
    if settled:
        prompt += "\n\nQuestions settled before approval:\n" + "\n".join(settled)
    return prompt + (f"\n\nWhen the requirement is met and verified, call finish with a summary and one entry per "
                     f"plan step ({len(plan.steps)}), in order.")
