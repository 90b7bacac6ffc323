"""`codeflux run`: one headless shot — open the repository, create a task, set its budget, plan, approve
(with ``--yes``), run under a headless policy, print the transcript, exit with the one table's code.

The pre-approved operations (``--allow``, repeatable) are exact, never patterns:

* ``run_command:COMMAND LINE`` — ``run_command`` with exactly the argv ``shlex.split(COMMAND LINE)`` gives
  (program as written, every argument, in order);
* ``TOOL:JSON`` — any other tool with exactly the arguments of the JSON object.

Anything a run would have to ask a person about becomes a recorded denial naming its cause (exit 4).
SIGINT / SIGTERM (here and in ``task plan|start|resume``; :class:`ShutdownOnSignal`) never cut anything
off half-way: while a plan is drafted, the model call under way finishes and its plan is recorded, then
the command stops before approving or running anything (exit 4; the task awaits plan approval, or is
paused if no plan was recorded); while a task runs, it is paused through the task service, so the run
stops at the next boundary — between turns, between tool calls, at the handover to validation — with
its attempt's ledger finished, a ``shutdown`` checkpoint follows and the exit is 4. ``codeflux task
resume`` continues the run's conversation (kept in SQLite, redacted) with the plan steps already done.
This module also holds the wiring the ``task plan|start|resume`` verbs share (provider routes, the
scripted provider's script, the transcript printer).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shlex
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import Final

from codeflux.api.v1 import product_pb2 as pb
from codeflux.authority.decide import DecisionOutcome
from codeflux.cli.channel import ChannelNeeds, ChannelUse, open_channel, startup_recovery
from codeflux.cli.context import CliContext
from codeflux.cli.documents import run_document
from codeflux.cli.exit_codes import ExitCode, exit_code_for
from codeflux.cli.inputs import read_text_file
from codeflux.cli.output import print_json
from codeflux.cli.views import print_plan
from codeflux.coordinator.hooks import Observers, ToolCallDecided, ToolCallRan, ToolCallSubmitted
from codeflux.coordinator.maintenance import append_app_log_record
from codeflux.coordinator.provider_keys import key_loader
from codeflux.coordinator.runs.configured import configured_thresholds
from codeflux.coordinator.runs.headless import HeadlessPolicy, PreapprovedOperation
from codeflux.coordinator.runs.loop import LoopLimits
from codeflux.coordinator.runs.planner import propose_plan
from codeflux.coordinator.runs.runner import RunOutcome, RunOutcomeKind, run_task
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.ladder_position import ladder_position_of
from codeflux.coordinator.spending.model_access import pinning
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.coordinator.spending.provider_choice import (
    ChoiceSource,
    PinnedChoice,
    ProviderChoice,
    read_task_pin,
)
from codeflux.coordinator.tasks.cancelled_runs import dispose_if_idle
from codeflux.coordinator.tasks.gates import require_landable_checkout
from codeflux.coordinator.tasks.ledger import evidence_identity_in
from codeflux.coordinator.tasks.recovery import shared_running_lock
from codeflux.coordinator.tasks.rejection import DiffRejection
from codeflux.coordinator.tasks.service import Actor, TaskService
from codeflux.coordinator.tasks.shutdown import capture_shutdown_checkpoint, pause_task_for_shutdown
from codeflux.coordinator.tasks.worktree_lifecycle import task_worktree_binding
from codeflux.coordinator.user_config import (
    ENVIRONMENT_VARIABLES,
    configured_ladder,
    load_user_config,
    resolve_defaults,
)
from codeflux.domain.capabilities import Capability
from codeflux.domain.clarification import ClarificationPolicy
from codeflux.domain.confinement import (
    ConfinementMode,
    describe_approval,
    describe_confinement,
    standing_approval_needs_opt_in,
)
from codeflux.domain.display import escape_for_display
from codeflux.domain.errors import (
    BudgetDecisionNeededError,
    BudgetExhaustedError,
    DatabaseMissingError,
    DirtyTreeNotAcknowledgedError,
    InvalidValueError,
    UnconfinedPreapprovalError,
    UsageError,
)
from codeflux.domain.ids import TaskId
from codeflux.domain.models import StopReason, ToolCall
from codeflux.domain.money import USD
from codeflux.domain.pipeline import GATING_STAGES, PipelinePhase, StageOutcome, StageVerdict, stage_named
from codeflux.domain.pricing import Price, TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import ToolName
from codeflux.domain.user_config import UserConfig
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.repository import RepositorySnapshot, open_repository
from codeflux.providers.endpoints import is_default_endpoint
from codeflux.providers.registry import build_model_adapter, build_scripted_adapter
from codeflux.providers.scripted import SCRIPTED_DISPLAY_NAME, ScriptedTurn
from codeflux.services.views import plan_view
from codeflux.store.database import Database, now_us, write_patience_s
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.worker.client.confinement import choose_confinement

NAME = "run"
SUMMARY = "one headless shot: create a task, plan, approve (--yes), run with pre-approved operations, report"
RECORDS_APP_LOG = True

SCRIPTED = "scripted"
PROVIDERS: Final = (SCRIPTED, "anthropic", "openai", "openai-compatible")
_SCRIPTED_MODELS: Final = ("scripted-cheap", "scripted-capable")
_MAX_SCRIPT_BYTES: Final = 4 * 1024 * 1024
_MAX_REQUIREMENT_FILE_BYTES: Final = 4 * 65_536
"""A requirement holds at most 65,536 characters (the task service says so); in UTF-8 that is at most 4 bytes each."""

ALLOW_HELP = ("pre-approve exactly one operation (repeatable): 'run_command:COMMAND LINE' is run_command with "
              "exactly the argv shlex.split gives (e.g. 'run_command:python3 -m pytest -q' allows only that "
              "argv); 'TOOL:{JSON}' is TOOL with exactly those arguments. No prefixes, no wildcards")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", required=True, metavar="PATH", help="the git repository (any path inside it)")
    text = parser.add_mutually_exclusive_group(required=True)
    text.add_argument("--requirement", metavar="TEXT", help="what the task must achieve")
    text.add_argument("--requirement-file", metavar="FILE", help="read the requirement from FILE (UTF-8)")
    parser.add_argument("--acknowledge-dirty", default=None, metavar="HASH",
                        help="the hash of the uncommitted changes you reviewed (printed when they exist)")
    parser.add_argument("--budget", default=None, metavar="AMOUNT",
                        help="hard budget in USD (default: $CODEFLUX_BUDGET, else the config file's [budget] "
                             "default_hard_limit, else 1.00)")
    parser.add_argument("--yes", action="store_true",
                        help="approve the plan revision just drafted (exactly its hash) and run; without it the "
                             "command stops after the plan with exit 4")
    parser.add_argument("--clarification", choices=[p.value for p in ClarificationPolicy], default=None,
                        help="open questions of the plan: ask (stop with exit 4 printing them) or assume (state "
                             "each question's reading as an assumption and go on); default: the setting (ask)")
    add_allow_argument(parser)
    add_provider_arguments(parser)
    parser.add_argument("--json", action="store_true",
                        help="print the transcript on stderr and one JSON document on stdout at the end: the exit "
                             "code, the task as `task show --json` gives it and the diff identity (docs/using.md)")


def add_allow_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow", action="append", default=[], metavar="OPERATION", help=ALLOW_HELP)
    parser.add_argument("--allow-unconfined", action="store_true",
                        help="where this machine cannot confine commands (`codeflux doctor`), let --allow "
                             "pre-approve programs anyway; they then run with no OS box (recorded in the log)")
    parser.add_argument("--allow-check-tools", action="store_true",
                        help="pre-approve the one install of codeflux's check tools (coverage.py, Hypothesis) into "
                             "its overlay for this repository, when the repository's environment lacks them: "
                             "from codeflux's own installation or $CODEFLUX_TOOL_WHEELHOUSE, never the network; "
                             "the repository's environment is not changed. Without it, the atom checks that "
                             "need them are blocked")


def unconfined_programs(policy: HeadlessPolicy, mode: ConfinementMode, *, opted_in: bool) -> list[str]:
    """The pre-approved programs that will run with no OS box; :class:`UnconfinedPreapprovalError` when
    there are any and the person did not opt in (``--allow-unconfined``)."""
    if not standing_approval_needs_opt_in(mode):
        return []
    programs = sorted(str(operation) for operation in policy.preapproved_operations
                      if operation.tool is ToolName.RUN_COMMAND)
    if programs and not opted_in:
        raise UnconfinedPreapprovalError(count=len(programs))
    return programs


def refuse_unconfined_preapprovals(ctx: CliContext, db: Database, driver: ToolDriver, policy: HeadlessPolicy, *,
                                   opted_in: bool) -> None:
    """With no OS box, pre-approving a program needs ``--allow-unconfined``; the opt-in is logged."""
    programs = unconfined_programs(policy, driver.confinement.mode, opted_in=opted_in)
    if not programs:
        return
    ctx.warn(f"warning: {len(programs)} pre-approved program(s) will run UNCONFINED (--allow-unconfined): "
             "this machine cannot box commands; they can reach the network and your files")
    append_app_log_record(db, level="warning", event="confinement.unconfined-opt-in",
                          fields_json=json.dumps({"command": ctx.command, "operations": programs}), at_us=now_us())


def add_provider_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", choices=PROVIDERS, default=None,
                        help="who answers: scripted (not a model; offline, the default unless the config file "
                             "names a provider: docs/using.md, \"Config file\") or a model provider "
                             "whose key is in the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY or "
                             "CODEFLUX_<PROVIDER>_API_KEY, which win) or the OS credential store "
                             "(`codeflux provider set`)")
    parser.add_argument("--script", default=None, metavar="FILE",
                        help="the scripted provider's turns (JSON: {\"plan\": [turns], \"run\": [turns]}; "
                             "default: the demo's shipped script)")
    parser.add_argument("--cheap-model", default=None, metavar="MODEL", help="the ladder's cheap model (providers)")
    parser.add_argument("--capable-model", default=None, metavar="MODEL",
                        help="the ladder's capable model (providers; default: the cheap one)")
    parser.add_argument("--base-url", default=None, metavar="URL",
                        help="the endpoint: an openai-compatible server's, or a proxy speaking the Anthropic or "
                             "OpenAI API (a non-default URL must be approved: `codeflux provider approve-endpoint`)")
    parser.add_argument("--no-key", action="store_true", help="the openai-compatible server takes no key")


# ─── --allow ─────────────────────────────────────────────────────────────────────────────────────────


def parse_operation(text: str) -> PreapprovedOperation:
    """One ``--allow`` value as an exact operation (see the module docstring)."""
    tool, colon, rest = text.partition(":")
    tool = tool.strip()
    if not colon or not tool or not rest.strip():
        raise UsageError(f"--allow wants TOOL:ARGUMENTS, e.g. 'run_command:python3 -m pytest -q' (got {text[:80]!r})")
    if tool == "run_command":
        try:
            argv = shlex.split(rest)
        except ValueError as error:
            raise UsageError(f"--allow run_command: the command line does not split: {error}") from None
        return PreapprovedOperation.command(argv)
    try:
        arguments = json.loads(rest)
    except ValueError:
        raise UsageError(f"--allow {tool}: the arguments must be one JSON object") from None
    if not isinstance(arguments, dict):
        raise UsageError(f"--allow {tool}: the arguments must be one JSON object")
    return PreapprovedOperation.of(tool, arguments)


def headless_policy(allowed: Sequence[str], *, check_tools: bool = False) -> HeadlessPolicy:
    return HeadlessPolicy.allowing((parse_operation(text) for text in allowed), check_tools=check_tools)


# ─── providers and the script ────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class Script:
    plan: tuple[ScriptedTurn, ...]
    run: tuple[ScriptedTurn, ...]


def _turn(raw: object, where: str) -> ScriptedTurn:
    """One scripted turn: ``text`` (or ``json``), ``tool_calls`` (``arguments`` an object, or the raw text
    a model wrote — it may be cut), ``usage``, and ``stop_reason`` (``max-tokens``: cut at the output bound)."""
    if not isinstance(raw, dict):
        raise InvalidValueError(kind="script", reason=f"{where} is not an object")
    text = json.dumps(raw["json"]) if "json" in raw else raw.get("text", "")
    usage_raw = raw.get("usage") or {}
    calls_raw = raw.get("tool_calls") or []
    if not isinstance(text, str) or not isinstance(usage_raw, dict) or not isinstance(calls_raw, list):
        raise InvalidValueError(kind="script", reason=f"{where}: text, usage or tool_calls has the wrong type")
    calls = []
    for index, call in enumerate(calls_raw):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not isinstance(
                call.get("arguments"), dict | str):
            raise InvalidValueError(kind="script", reason=f"{where} tool call {index + 1} needs name and arguments")
        arguments = call["arguments"]
        calls.append(ToolCall(call_id=str(call.get("id") or f"call-{index + 1}"), name=call["name"],
                              arguments_json=arguments if isinstance(arguments, str)
                              else json.dumps(arguments, ensure_ascii=False)))
    usage = TokenUsage(input_tokens=usage_raw.get("input_tokens"), output_tokens=usage_raw.get("output_tokens"),
                       cache_read_tokens=0 if usage_raw else None, cache_write_tokens=0 if usage_raw else None)
    stop = raw.get("stop_reason")
    if stop is not None and stop not in {reason.value for reason in StopReason}:
        raise InvalidValueError(kind="script", reason=f"{where}: stop_reason is not one of {', '.join(StopReason)}")
    return ScriptedTurn(text=text, tool_calls=tuple(calls), usage=usage,
                        stop_reason=None if stop is None else StopReason(stop))


def load_script(path: str | None) -> Script:
    """The scripted provider's turns from ``path``, or the demo's shipped script."""
    if path is None:
        data = resources.files("codeflux.cli").joinpath("demo_files", "script.json").read_text("utf-8")
    else:
        data = read_text_file(path, what="--script", max_bytes=_MAX_SCRIPT_BYTES)
    try:
        raw = json.loads(data)
    except ValueError:
        raise InvalidValueError(kind="script", reason="the file is not JSON") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("plan", []), list) or not isinstance(
            raw.get("run", []), list):
        raise InvalidValueError(kind="script", reason='expected {"plan": [turns], "run": [turns]}')
    return Script(plan=tuple(_turn(t, f"plan turn {i + 1}") for i, t in enumerate(raw.get("plan", []))),
                  run=tuple(_turn(t, f"run turn {i + 1}") for i, t in enumerate(raw.get("run", []))))


def with_configured_provider(args: argparse.Namespace, environ: Mapping[str, str], *,
                             config: UserConfig | None = None) -> argparse.Namespace:
    """``args`` with the provider to use and its models, each value by its own precedence: a flag, the environment
    (``CODEFLUX_PROVIDER``, ``CODEFLUX_CHEAP_MODEL``, …), the config file (:mod:`codeflux.domain.user_config`), the
    built-in default (scripted) — :func:`codeflux.coordinator.user_config.resolve_defaults`."""
    chosen = resolve_defaults(_flags_of(args), environ, config)
    provider = chosen.provider.value
    return argparse.Namespace(**{**vars(args), "provider": provider,
                                 "cheap_model": chosen.cheap_model.value or None,
                                 "capable_model": chosen.capable_model.value or None,
                                 "base_url": chosen.base_url.value or None,
                                 "provider_source": chosen.provider.source})


def with_environment(args: argparse.Namespace, environ: Mapping[str, str]) -> argparse.Namespace:
    """``args`` with ``CODEFLUX_PROVIDER`` (and the models and base URL given with it) taken as the flags they
    stand for when no ``--provider`` flag was given: the environment ranks with a flag, above the choice stored
    in Settings (``codeflux start``)."""
    if args.provider is not None or not environ.get(ENVIRONMENT_VARIABLES["provider"], "").strip():
        return args
    return with_configured_provider(args, environ, config=UserConfig())


def _flags_of(args: argparse.Namespace) -> dict[str, str | None]:
    return {name: getattr(args, name, None) for name in ("provider", "cheap_model", "capable_model", "base_url",
                                                          "budget")}


_PIN_SOURCE: Final = {"flag": ChoiceSource.FLAG, "environment": ChoiceSource.ENVIRONMENT,
                      "config": ChoiceSource.CONFIG, "built-in": ChoiceSource.DEFAULT}
"""The pin's source for each source :func:`resolve_defaults` names."""


def args_with_choice(args: argparse.Namespace, choice: ProviderChoice, source: ChoiceSource) -> argparse.Namespace:
    """``args`` with ``choice``'s provider (the choice stored in Settings, or a task's pin): the demo's scripted
    choice replays the demo's shipped script, any other scripted one the ``--script`` given."""
    if choice.scripted:
        script = None if source is ChoiceSource.DEMO else args.script
        return argparse.Namespace(**{**vars(args), "provider": SCRIPTED, "script": script})
    return argparse.Namespace(**{**vars(args), "provider": choice.provider, "script": None,
                                 "cheap_model": choice.cheap_model, "capable_model": choice.capable,
                                 "base_url": choice.base_url or None, "no_key": not choice.uses_key})


def pin_of_args(args: argparse.Namespace, source: ChoiceSource) -> PinnedChoice:
    """What a task created with the provider of ``args`` (resolved: never ``None``) pins, and why."""
    if args.provider == SCRIPTED:
        return PinnedChoice(choice=ProviderChoice(provider=SCRIPTED), source=source)
    compatible = args.provider == ProviderName.OPENAI_COMPATIBLE.value
    base_url = args.base_url or ""
    if base_url and not compatible and is_default_endpoint(ProviderName.parse(args.provider), base_url):
        base_url = ""  # the provider's own endpoint: pinned as the default it is
    choice = ProviderChoice.normalized(
        provider=args.provider, cheap_model=args.cheap_model or "", capable_model=args.capable_model or "",
        base_url=base_url, uses_key=not (compatible and args.no_key))
    return PinnedChoice(choice=choice, source=source)


def build_gateway(db: Database, args: argparse.Namespace, *, phases: Sequence[str]) -> tuple[ModelGateway, str]:
    """The real gateway over the chosen provider (no flag: :func:`with_configured_provider`), and the provider's
    display name. The config file's ``[ladder]`` and per-model ``max_output_tokens`` apply to it."""
    config = load_user_config(os.environ)
    args = with_configured_provider(args, os.environ, config=config)
    ladder, stall_threshold = configured_ladder(config)
    configured_thresholds(config)  # an unknown or out-of-range [pipeline] key is refused before anything runs
    output_tokens = {model: settings.max_output_tokens for model, settings in config.models.items()
                     if settings.max_output_tokens is not None}
    if args.provider == SCRIPTED:
        script = load_script(args.script)
        turns = [turn for phase in phases for turn in getattr(script, phase)]
        _price_scripted_at_zero(db)
        route = ModelRoute(provider=SCRIPTED, adapter=build_scripted_adapter(turns), cheap_model=_SCRIPTED_MODELS[0],
                           capable_model=_SCRIPTED_MODELS[1])
        return (ModelGateway(db, [route], ladder=ladder, stall_threshold=stall_threshold),
                SCRIPTED_DISPLAY_NAME)
    if args.script is not None:
        raise UsageError("--script is for --provider scripted only")
    if not args.cheap_model:
        raise UsageError(f"--provider {args.provider} needs --cheap-model (and optionally --capable-model)")
    adapter = build_model_adapter(args.provider, base_url=args.base_url, uses_key=not args.no_key,
                                  key_loader=key_loader(db), network=config.network, environ=os.environ)
    route = ModelRoute(provider=args.provider, adapter=adapter, cheap_model=args.cheap_model,
                       capable_model=args.capable_model or args.cheap_model, output_tokens=output_tokens)
    return (ModelGateway(db, [route], ladder=ladder, stall_threshold=stall_threshold),
            str(getattr(adapter, "display_name", args.provider)))


def _price_scripted_at_zero(db: Database) -> None:
    """The scripted provider costs nothing: record that price once, so its calls settle at exactly 0."""
    catalog = PriceCatalog(db)
    known = {listing.model for listing in catalog.list_prices(SCRIPTED)}
    free = Price.from_per_million_tokens(currency=USD, input_per_million="0", output_per_million="0")
    for model in _SCRIPTED_MODELS:
        if model not in known:
            catalog.set_user_price(provider=SCRIPTED, model=model, price=free, effective_date=dt.date(2000, 1, 1),
                                   detail="scripted (not a model): costs nothing")


# ─── the transcript ──────────────────────────────────────────────────────────────────────────────────


def _brief(tool: str, arguments: Mapping[str, object]) -> str:
    """The request on one line, escaped for display (:func:`codeflux.domain.display.escape_for_display`):
    an argument holding a bidi override or a newline cannot disguise itself or another argument."""
    argv = arguments.get("argv")
    if tool == "run_command" and isinstance(argv, list):
        text = shlex.join(escape_for_display(str(a)) for a in argv)
    else:
        text = ", ".join(f"{k}={escape_for_display(str(v))}" for k, v in arguments.items()
                         if k in ("path", "pattern", "old_text"))
    return text if len(text) <= 160 else text[:160] + " … (cut)"


class _Transcript:
    """Says every request, decision and execution of a run as it happens (see :func:`transcript_observers`)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._seen: set[str] = set()  # a retried submission announces its request again: said once

    def submitted(self, submitted: ToolCallSubmitted) -> None:
        request = submitted.request
        if request.request_id in self._seen:
            return
        self._seen.add(request.request_id)
        self._say(f"  tool call   {request.request_id}  {request.tool}  "
                  f"{_brief(request.tool, submitted.arguments)}  [{submitted.source}]")
        self._say(f"    decision  {request.outcome} by {request.decision.decided_by}: "
                  f"{escape_for_display(request.decision.reason[:200])}")
        if request.outcome is DecisionOutcome.PENDING:
            capabilities = {item.need.capability for item in request.needs}
            meaning = describe_approval(runs_program=Capability.PROCESS in capabilities,
                                        network=Capability.NETWORK in capabilities, mode=submitted.confinement)
            if meaning:
                self._say(f"    approving means: {meaning}")

    def decided(self, decided: ToolCallDecided) -> None:
        request = decided.request
        self._say(f"    decision  {request.request_id}  {request.outcome} by {request.decision.decided_by}: "
                  f"{escape_for_display(request.decision.reason[:200])}")

    def ran(self, ran: ToolCallRan) -> None:
        record = ran.execution
        code = "" if record.exit_code is None else f" exit {record.exit_code}"
        failure = f" ({record.failure_kind})" if record.failure_kind else ""
        boxed = f" [confinement: {record.confinement}]" if record.confinement else ""
        self._say(f"    ran       {ran.request_id}  {record.state}{code}{failure}{boxed}")


def transcript_observers(say: Callable[[str], None]) -> Observers:
    """Observers of the tool driver (:mod:`codeflux.coordinator.hooks`) that ``say`` every tool request, decision
    and execution of a run as it happens: the transcript ``codeflux run`` and ``task start|resume`` print."""
    transcript = _Transcript(say)
    return (Observers().subscribe(ToolCallSubmitted, transcript.submitted)
            .subscribe(ToolCallDecided, transcript.decided).subscribe(ToolCallRan, transcript.ran))


_EXIT_OF: Final = {RunOutcomeKind.AWAITING_REVIEW: ExitCode.OK, RunOutcomeKind.NEEDS_YOU: ExitCode.FAILED,
                   RunOutcomeKind.AWAITING_AUTHORITY:
                   ExitCode.DECISION_NEEDED, RunOutcomeKind.DECISION_NEEDED: ExitCode.DECISION_NEEDED,
                   RunOutcomeKind.PAUSED: ExitCode.DECISION_NEEDED, RunOutcomeKind.CANCELLED: ExitCode.FAILED,
                   RunOutcomeKind.STOPPED: ExitCode.FAILED, RunOutcomeKind.FAILED: ExitCode.FAILED}


def _say_spend(ctx: CliContext, budgets: BudgetService, task_id: TaskId) -> None:
    """Measured spend (unknown stays unknown), the hard limit and what is left."""
    if budgets.revision_of(task_id) is None:
        return
    ctx.say(budgets.summary(task_id).spend_line())


def _warn_if_evidence_differs(ctx: CliContext, checked: str | None, identity: str) -> None:
    """Say so when the diff now (``identity``) is not the one the attempt's checks gathered their evidence on."""
    if checked is not None and checked != identity:
        ctx.warn(f"the evidence was gathered on diff {checked[:12]}, but the worktree's diff is now "
                 f"{identity[:12]} (it changed after the checks ran): accept refuses it")


def _gate_code(ctx: CliContext, verdicts: Sequence[StageVerdict], code: ExitCode) -> ExitCode:
    """The exit code once the gating stages are read: a red one is never exit 0 (1), and neither is one of
    phase E's gates that could not run (3). Says which."""
    red = [verdict.stage.value for verdict in verdicts
           if verdict.stage in GATING_STAGES and verdict.outcome is StageOutcome.FAILED]
    if red and code is ExitCode.OK:
        code = ExitCode.FAILED  # reviewable, but a gating check is red: never exit 0
    if red:
        ctx.say(f"gating stages failed: {', '.join(red)} — the evidence is red; review it before accepting")
    # Phase E's gates always run (ARCHITECTURE §8.2): one that is blocked on a run that ended well had a
    # prerequisite missing (no pytest, no interpreter) — nothing showed the change works, so never exit 0.
    unrun = [verdict for verdict in verdicts if code is ExitCode.OK and verdict.stage in GATING_STAGES
             and stage_named(verdict.stage).phase is PipelinePhase.PROGRAM and verdict.outcome is StageOutcome.BLOCKED]
    for verdict in unrun:
        code = ExitCode.PREREQUISITE
        ctx.say(f"gating stages not run: {verdict.stage.value} — {escape_for_display(verdict.reason or '')[:600]}")
    return code


def report_outcome(ctx: CliContext, tasks: TaskService, outcome: RunOutcome) -> int:
    """The ledger summary, the diff identity and the ending; returns the exit code."""
    task_id = outcome.task_id
    rows = tasks.ledger(task_id, outcome.attempt)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.verdict.outcome.value] = counts.get(row.verdict.outcome.value, 0) + 1
    ctx.say(f"stage ledger (attempt {outcome.attempt}): {len(rows)} rows; "
            + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())))
    for row in rows:
        if row.verdict.outcome is not StageOutcome.NOT_IMPLEMENTED:
            text = row.verdict.gate_evaluation or row.verdict.reason or ""
            ctx.say(f"  {row.number:>2} {row.verdict.stage.value:<22} {row.verdict.outcome.value:<9} {text[:150]}")
    for denial in outcome.denials:
        ctx.say(f"denied: {escape_for_display(denial)}")
    task = tasks.show(task_id).task
    binding = task_worktree_binding(task)
    identity = None
    if binding is not None and binding.path.exists():
        identity = diff_against_base(binding).identity
        ctx.say(f"diff identity {identity} (`codeflux task diff {task_id}`)")
        _warn_if_evidence_differs(ctx, evidence_identity_in(rows), identity)
    _say_spend(ctx, BudgetService(tasks.changes.db), task_id)
    ctx.say(f"task {task_id}: {task.state} — {outcome.kind}: {escape_for_display(outcome.reason[:300])}")
    # A failed model call ends the run with the error's own code in the one table (1 for a provider
    # failure such as a script that ran out of turns, 4 for a budget refusal); every other ending by kind.
    code = _EXIT_OF[outcome.kind] if outcome.error is None else exit_code_for(outcome.error)
    code = _gate_code(ctx, [row.verdict for row in rows], code)
    if outcome.kind is RunOutcomeKind.NEEDS_YOU:
        ctx.say(f"next: `codeflux task diff {task_id}` and `codeflux task show {task_id}`; then accept, or reject "
                "it with --reason")
    elif outcome.kind is RunOutcomeKind.AWAITING_REVIEW and identity is not None:
        ctx.say(f"next: codeflux task accept {task_id} --identity {identity}  (or reject it with --reason)")
    elif isinstance(outcome.error, BudgetDecisionNeededError | BudgetExhaustedError):
        ctx.say(f"next: the budget decision named above (`codeflux budget show --task {task_id}` shows the figures), "
                f"then `codeflux task resume {task_id}`")
    elif outcome.error is not None and task.state is TaskState.PAUSED:
        ctx.say(f"next: `codeflux task resume {task_id}` with a provider (or script) that can answer continues the "
                f"conversation; `codeflux task cancel {task_id}` ends it")
    elif code is ExitCode.DECISION_NEEDED:
        ctx.say(f"next: `codeflux task show {task_id}`; allow what is needed exactly (--allow) and "
                f"`codeflux task resume {task_id}`")
    ctx.say(f"exit {int(code)}")
    return int(code)


def run_ready_task(ctx: CliContext, db: Database, location: DataLocation, tasks: TaskService, task_id: TaskId,
                   *, args: argparse.Namespace, phases: Sequence[str] = ("run",),
                   gateway: tuple[ModelGateway, str] | None = None,
                   shutdown: ShutdownOnSignal | None = None, retry_feedback: str | None = None,
                   rejection: DiffRejection | None = None) -> int:
    """Run a ``ready`` task in this process under the headless policy of ``args.allow``; holds the
    shared running lock throughout. ``shutdown``: the command's own signal handling, already installed
    (one is installed here otherwise). ``retry_feedback``: another attempt for a task awaiting review or
    failed (``codeflux task retry``); ``rejection``: the diff under review is rejected as that attempt starts
    (``codeflux task reject --retry``). Returns the exit code."""
    policy = headless_policy(args.allow, check_tools=args.allow_check_tools)
    pin = read_task_pin(db, task_id) if gateway is None and getattr(args, "provider", None) is None else None
    if pin is not None:  # no --provider flag on this command: the task's pinned choice (none: created before pins)
        args = args_with_choice(args, pin.choice, pin.source)
    chosen, provider = gateway or build_gateway(db, args, phases=phases)
    task = tasks.show(task_id).task
    handling = contextlib.nullcontext(shutdown) if shutdown is not None else ShutdownOnSignal(ctx, location)
    with handling as stopping:
        if stopping.requested is not None:
            ctx.say(f"{stopping.requested}: stopped before the run of task {task_id} started; it is "
                    f"{tasks.show(task_id).task.state} (`codeflux task start {task_id}` runs it)")
            ctx.say(f"exit {int(ExitCode.DECISION_NEEDED)}")
            return int(ExitCode.DECISION_NEEDED)
        ctx.say(f"running task {task_id} with {provider}; {len(policy.preapproved_operations)} pre-approved "
                "operation(s); prompting is off")
        with shared_running_lock(location), ToolDriver(db, state_dir=location.directory / "workers",
                                                       allow_unconfined=args.allow_unconfined,
                                                       observers=transcript_observers(ctx.say)) as driver:
            refuse_unconfined_preapprovals(ctx, db, driver, policy, opted_in=args.allow_unconfined)
            ctx.say(f"commands run {describe_confinement(driver.confinement.mode, network=False)}")
            stopping.pause_task_on_signal(task_id)
            outcome = run_task(task_id, gateway=chosen, driver=driver, tasks=tasks,
                               repo_snapshot=open_repository(task.repository_root),
                               position=ladder_position_of(db, task_id, chosen.ladder,
                                                           stall_threshold=chosen.stall_threshold),
                               limits=LoopLimits(), headless_policy=policy, retry_feedback=retry_feedback,
                               rejection=rejection,
                               provider=SCRIPTED if provider == SCRIPTED_DISPLAY_NAME else None)
            dispose_if_cancelled(ctx, db, tasks, task_id)
            if stopping.requested is not None:
                stopping.settle()
                row = capture_shutdown_checkpoint(tasks.changes, task_id)
                if row is not None:
                    ctx.say(f"shutdown checkpoint {row.sequence} on {row.ref_name} ({row.commit_id[:12]})")
        return report_outcome(ctx, tasks, outcome)


def dispose_if_cancelled(ctx: CliContext, db: Database, tasks: TaskService, task_id: TaskId) -> None:
    """A task cancelled while this process ran it (``task cancel`` from another terminal left the worktree to
    this run, whose command it stopped): its worktree goes now that no command of it runs."""
    if tasks.show(task_id).task.state is not TaskState.CANCELLED:
        return
    done = dispose_if_idle(db, task_id)
    if done.disposal is not None and done.disposal.removed:
        ctx.say(f"task {task_id} was cancelled: its running command was stopped and its worktree removed")
    elif done.disposal is not None:
        ctx.say(f"task {task_id} was cancelled; its worktree was kept: {done.disposal.detail}")


class StopSignals:
    """While entered, SIGINT and SIGTERM go to ``handler`` (set from the main thread only: elsewhere nothing
    changes); on exit the handlers before it are put back. ``run``'s shutdown and ``watch``'s stop both use it."""

    def __init__(self, handler: Callable[[int, FrameType | None], None]) -> None:
        self._handler = handler
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)  # type: ignore[arg-type]
        self._previous.clear()


class ShutdownOnSignal:
    """SIGINT / SIGTERM during a command that plans or runs a task: stop at the next boundary, resumable.

    Two phases. Until :meth:`pause_task_on_signal` names the task that runs, a signal is only recorded
    (``requested``): the command finishes what is under way — the plan being drafted is validated and
    recorded — and then stops before approving or running anything (the planner is asked not to make a
    further model call). Once a task runs, a signal pauses it.

    The handler does not write anything itself (the main thread may be inside a transaction on its own
    connection): it starts one thread that, over a connection of its own, pauses the task through the
    task service (:func:`~codeflux.coordinator.tasks.shutdown.pause_task_for_shutdown`, which ``codeflux start``
    uses too) — the honest path, since the loop reads the task's state before every turn and every
    tool call, and the runner at every hand-over. The run then ends ``paused`` at the next boundary (a
    tool already executing finishes first; nothing is killed half-way) with its attempt's ledger
    finished, :func:`run_ready_task` takes a ``shutdown`` checkpoint and the exit code is the one table's
    4 (``codeflux task resume`` goes on). A task still ``ready`` (the run is about to start it) is watched
    until it runs and then paused; a task that is not in a pausable state otherwise (say, already awaiting
    review) is left as it is. A second signal only repeats that the stop is under way.
    """

    def __init__(self, ctx: CliContext, location: DataLocation, task_id: TaskId | None = None) -> None:
        self._ctx, self._location = ctx, location
        self._task_id: TaskId | None = task_id
        self.requested: str | None = None
        self._thread: threading.Thread | None = None
        self._signals = StopSignals(self._handle)
        self._watching = threading.Event()  # cleared by settle(): the pausing thread stops watching

    def __enter__(self) -> ShutdownOnSignal:
        self._signals.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._signals.__exit__()
        self.settle()

    def stop_requested(self) -> str | None:
        """The signal's name once one arrived (what the planner asks before each model call)."""
        return self.requested

    def pause_task_on_signal(self, task_id: TaskId) -> None:
        """From now on a signal pauses ``task_id`` (and one that already arrived does so now)."""
        self._task_id = task_id
        if self.requested is not None and self._thread is None:
            self._start_pausing()

    def _handle(self, number: int, frame: object) -> None:
        name = signal.Signals(number).name
        if self.requested is not None:
            self._ctx.warn(f"codeflux: {name}: already stopping at the next boundary")
            return
        self.requested = name
        if self._task_id is None:
            self._ctx.warn(f"codeflux: {name}: stopping once the step under way is recorded (a model call in "
                           "progress finishes first); nothing else starts")
            return
        self._ctx.warn(f"codeflux: {name}: pausing task {self._task_id} before its next turn "
                       "(a running tool finishes first); a shutdown checkpoint follows")
        self._start_pausing()

    def _start_pausing(self) -> None:
        self._watching.set()
        self._thread = threading.Thread(target=self._pause, name="codeflux-shutdown", daemon=True)
        self._thread.start()

    def settle(self) -> None:
        """Stop watching and wait for the pausing thread (it ends after at most one transaction)."""
        self._watching.clear()
        if self._thread is not None:
            self._thread.join()

    def _pause(self) -> None:
        task_id = self._task_id
        if task_id is None:  # pragma: no cover (started only once a task is named)
            return
        db = open_store(self._location, create=False, migrate=False)
        try:
            pause_task_for_shutdown(TaskService(db, worktrees_root=self._location.worktrees), task_id,
                                    reason=f"{self.requested}: codeflux is shutting down", actor=Actor.USER,
                                    keep_trying=self._watching.is_set)
        finally:
            db.close()


def key() -> str:
    return f"cli-{os.urandom(16).hex()}"


def require_acknowledged(ctx: CliContext, snapshot: RepositorySnapshot, acknowledged: str | None) -> None:
    if snapshot.is_dirty and acknowledged != snapshot.dirty_hash:
        ctx.say(f"{snapshot.root} has uncommitted changes:")
        for entry in snapshot.changes:
            ctx.say(f"  {entry.status!s:<12} {entry.path}  {entry.content_sha256 or '-'}")
        ctx.say(f"if the task may start from exactly these, add --acknowledge-dirty {snapshot.dirty_hash}")
        raise DirtyTreeNotAcknowledgedError(path=str(snapshot.root), change_count=len(snapshot.changes),
                                            current_hash=snapshot.dirty_hash, acknowledged_hash=acknowledged)


# ─── the command ─────────────────────────────────────────────────────────────────────────────────────


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    if not args.json:
        return _run_headless(args, ctx, _CreatedTask())
    created = _CreatedTask()
    transcript = ctx.writing_to(ctx.stderr)  # for the person watching; stdout is the document's
    code = _run_headless(args, transcript, created)
    if created.task_id is not None:
        print_json(ctx, _run_document(transcript, created.task_id, code))
    return code


@dataclass(slots=True)
class _CreatedTask:
    """The task a run created, once it exists (``--json`` describes it when the run ends)."""

    task_id: TaskId | None = None


def _run_document(ctx: CliContext, task_id: TaskId, code: int) -> dict[str, object]:
    """The task as the method table shows it now (the running coordinator's socket, else this process), and the
    identity of its diff when its worktree is there. ``ctx`` is the transcript's: what opening the channel says
    goes to stderr."""
    with open_channel(ctx, ChannelNeeds(use=ChannelUse.EXISTING)) as channel:
        if channel is None:  # EXISTING always gives a channel or raises; kept for the type checker
            raise DatabaseMissingError("no codeflux database to read the task from")
        view = channel.call("TaskService/GetTask", pb.GetTaskRequest(task_id=task_id.value), pb.TaskView)
        identity = None
        if view.worktree_exists:
            diff = channel.call("ReviewService/GetDiff", pb.GetDiffRequest(task_id=task_id.value), pb.DiffBytes)
            identity = diff.diff_identity or None
    return run_document(view, exit_code=code, diff_identity=identity)


def _run_headless(args: argparse.Namespace, ctx: CliContext, created: _CreatedTask) -> int:
    # A malformed --allow, or one that would run a program unconfined without the opt-in, is refused
    # before anything is written; so is a malformed $CODEFLUX_WRITE_PATIENCE_S.
    unconfined_programs(headless_policy(args.allow), choose_confinement().mode, opted_in=args.allow_unconfined)
    patience = write_patience_s()
    requirement = args.requirement if args.requirement is not None else _read_requirement(args.requirement_file)
    budget = resolve_defaults(_flags_of(args), os.environ).budget
    location = ctx.location()
    db = open_store(location, create=True, migrate=True)
    try:
        startup_recovery(ctx, db, location)
        tasks = TaskService(db, worktrees_root=location.worktrees)
        snapshot = open_repository(Path(args.repo))
        require_landable_checkout(snapshot)  # a rebase in progress is refused before any acknowledgement
        require_acknowledged(ctx, snapshot, args.acknowledge_dirty)
        gateway = build_gateway(db, args, phases=("plan", "run"))  # a bad --script is refused before the task
        # The task pins this command's provider (a flag or the environment, else the config file's, else scripted):
        # a later `task start` or `task resume` without a --provider flag uses it.
        resolved = with_configured_provider(args, os.environ)
        pin = pin_of_args(resolved, _PIN_SOURCE[resolved.provider_source.split(" ")[0]])
        # Unattended from here on (planning, then the run): every write waits out another process's write lock
        # for up to the write patience, as the run's own do (docs/storage.md).
        with shared_running_lock(location), ShutdownOnSignal(ctx, location) as shutdown, db.patient_writes(patience):
            change = tasks.create_task(snapshot, requirement, acknowledged_dirty_hash=args.acknowledge_dirty,
                                       acknowledged_by=Actor.USER, idempotency_key=key(),
                                       also=pinning(pin))
            task_id = change.task_id
            created.task_id = task_id
            ctx.say(f"task {task_id} created for {snapshot.root} on {snapshot.branch or 'its branch'}")
            BudgetService(db).set_budget(task_id, hard_limit=budget, expected_revision=None, idempotency_key=key())
            ctx.say(f"budget {budget} hard limit")
            policy = None if args.clarification is None else ClarificationPolicy(args.clarification)
            planned = propose_plan(task_id, gateway=gateway[0], tasks=tasks, position=gateway[0].start_position(),
                                   idempotency_key=key(), stop_requested=shutdown.stop_requested,
                                   clarification=policy)
            shown = plan_view(revision=planned.revision, sha256=planned.sha256, plan=planned.plan, decision=None,
                              author_label=gateway[1], requirement=requirement)
            print_plan(ctx, shown, indent="")
            approve = (f"`codeflux task approve-plan {task_id} --revision {planned.revision} --sha256 "
                       f"{planned.sha256}` and `codeflux task start {task_id}`")
            if shutdown.requested is not None:
                ctx.say(f"{shutdown.requested}: stopped after recording plan revision {planned.revision}; nothing "
                        f"was approved or run. Go on with {approve}")
                ctx.say(f"exit {int(ExitCode.DECISION_NEEDED)}")
                return int(ExitCode.DECISION_NEEDED)
            if planned.plan.open_questions:
                return _ask_open_questions(ctx, task_id, shown)
            if not args.yes:
                ctx.say(f"plan approval needed and prompting is off: approve with {approve}, or run again with --yes")
                ctx.say(f"exit {int(ExitCode.DECISION_NEEDED)}")
                return int(ExitCode.DECISION_NEEDED)
            tasks.approve_plan(task_id, revision=planned.revision, sha256=planned.sha256, idempotency_key=key())
            ctx.say(f"plan revision {planned.revision} approved (--yes) by its hash {planned.sha256[:12]}")
            return run_ready_task(ctx, db, location, tasks, task_id, args=args, gateway=gateway, shutdown=shutdown)
    finally:
        db.close()


def _ask_open_questions(ctx: CliContext, task_id: TaskId, plan: pb.PlanView) -> int:
    """The clarification policy is ask and the plan has open questions: print them and stop (exit 4)."""
    for question in plan.questions:
        if question.status == "open":
            ctx.say(f"question {question.number}: {escape_for_display(question.question)}")
    ctx.say(f"plan revision {plan.revision} has open questions (clarification policy ask), so it is not approved: "
            f"answer each with `codeflux task answer {task_id} --question N --text TEXT`, then approve the revision "
            "that records the answers (or run again with --clarification assume)")
    ctx.say(f"exit {int(ExitCode.DECISION_NEEDED)}")
    return int(ExitCode.DECISION_NEEDED)


def _read_requirement(path: str) -> str:
    return read_text_file(path, what="--requirement-file", max_bytes=_MAX_REQUIREMENT_FILE_BYTES)
