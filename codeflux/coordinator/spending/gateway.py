"""The model gateway: the only place in codeflux that calls a model.

:meth:`ModelGateway.call` runs every call through the same steps, each journaled on the task's session:

1. **Check** (nothing is written if a check fails, except the refusal's event and, for the budget, the
   pause): the task is forecasting, running or validating; the route's endpoint is the provider's
   default or the person approved that exact normalized base URL; the rung, when it asks before
   spending (``capable:max``), was approved for the task; the budget lets a paid call start
   (:meth:`~codeflux.coordinator.spending.ledger.BudgetLedger.check`). A budget refusal commits a
   ``model-call-refused`` event and pauses a running task in the same transaction, then raises
   :class:`BudgetExhaustedError` or :class:`BudgetDecisionNeededError`.
2. **Intent**: the request row (``planned``), its reservation and ``model-call-planned`` commit in one
   transaction. Then ``in-flight`` and ``model-call-started`` commit, right before the adapter is called.
3. **Call** the adapter once (its transport retries only what the provider cannot have processed).
4. **Settle** in one transaction: usage, cost, the closing ledger entries and ``model-call-finished``.
   A failure that may have been billed charges the reserved bound as an unknown charge, which blocks
   further paid calls until acknowledged; a failure before anything was sent releases it.

Every ledger entry goes through :class:`~codeflux.coordinator.spending.ledger.BudgetLedger`
(``reserve``, ``settle``, ``release``, ``record_unknown``), inside the transaction of its step.

A process that dies between 2 and 4 leaves ``planned`` or ``in-flight`` rows:
:func:`reconcile_interrupted_model_requests` fails the planned ones (nothing was sent; released) and
marks the in-flight ones ``outcome-unknown`` (the bound is charged). Nothing is ever retried.

The rung comes from the caller's :class:`~codeflux.domain.ladder.LadderPosition`: its tier picks the
route's cheap or capable model and its effort is sent as the request's effort (whatever model and
effort the caller put in the request are replaced). The output bound is the caller's, or the model's
configured one (:attr:`ModelRoute.output_tokens`; twice it when a turn cut at it is asked again), clamped to
what the model's context window leaves after the request's estimated input — a request the window has too
little room left in is not sent (:meth:`ModelGateway.output_bound`). Streamed text reaches ``on_text``
redacted; the returned reply is the provider's, unredacted, for the loop to act on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Final

from codeflux.coordinator.spending.ledger import BudgetLedger, refusal_error
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.domain.budget import (
    BudgetRefusal,
    BudgetSummary,
    LedgerMove,
    bound_input_tokens,
    charged_by,
    crosses_warning,
    overrun_of,
    reservation_bound,
    reserve_move,
    summarize_budget,
)
from codeflux.domain.errors import (
    BudgetDecisionNeededError,
    BudgetExhaustedError,
    CodefluxError,
    ConflictError,
    ContextWindowFullError,
    CredentialNotFoundError,
    CredentialStoreUnavailableError,
    EndpointApprovalRequiredError,
    IdempotencyConflictError,
    InvalidValueError,
    ModelCallRefusedError,
    ProviderError,
    ProviderOutcomeUnknownError,
    ProviderRejectedError,
    ProviderReplyInvalidError,
    ProviderUnavailableError,
    RungApprovalRequiredError,
    ScriptExhaustedError,
)
from codeflux.domain.events import (
    BudgetExhausted,
    BudgetWarning,
    ModelCallFinished,
    ModelCallPlanned,
    ModelCallReconciled,
    ModelCallRefused,
    ModelCallStarted,
    SettlementMove,
)
from codeflux.domain.forecast import ModelPrice
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import (
    DEFAULT_LADDER,
    DEFAULT_STALL_THRESHOLD,
    Ladder,
    LadderPosition,
    ModelTier,
    Rung,
)
from codeflux.domain.model_calls import ModelCallErrorKind, ModelRequestState
from codeflux.domain.models import ModelReply, ModelRequest
from codeflux.domain.money import Cost, Money, UnknownCost
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.providers.capabilities import context_window_of
from codeflux.providers.endpoints import is_default_endpoint, normalize_base_url
from codeflux.providers.prices import DEFAULT_PRICE_SNAPSHOTS, PriceSnapshot
from codeflux.providers.wire import ModelAdapter, TextSink
from codeflux.redact import Redactor, StreamRedactor, default_redactor
from codeflux.store import model_requests as model_rows
from codeflux.store import money as budget_rows
from codeflux.store import prices as price_rows
from codeflux.store.database import Database, Transaction, now_us
from codeflux.store.events import append_event
from codeflux.store.task_records import change_task_state
from codeflux.store.tasks import TaskRow, require_task

__all__ = [
    "SCRIPTED_PROVIDER",
    "GatewayReply",
    "ModelGateway",
    "ModelRoute",
    "reconcile_interrupted_model_requests",
]

SCRIPTED_PROVIDER: Final = "scripted"
_CALLING_STATES: Final = frozenset({TaskState.FORECASTING, TaskState.RUNNING, TaskState.VALIDATING})
_PAUSABLE_STATES: Final = _CALLING_STATES
_PRICED_PROVIDERS: Final = frozenset(p.value for p in ProviderName)  # those `codeflux prices set` takes
MIN_OUTPUT_TOKENS: Final = 1024
"""The least output room a request is sent with when the window is the limit (a tool call and a few lines of
text); a caller asking less gets what it asked. Less room than that: not sent (:class:`ContextWindowFullError`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRoute:
    """A provider the gateway may call: its adapter and the models of the ladder's two tiers.

    ``provider`` is a :class:`ProviderName` value or ``scripted``. The endpoint checked is the adapter's
    own ``base_url``, so the URL approved is the URL called. ``writes_cache``: the adapter asks the
    provider to write a prompt cache on its calls (Anthropic's does: prompt caching), so their input is
    reserved at the cache-write rate, the dearest it can be billed at; otherwise at the input or
    cache-read rate. Left out, it is what the adapter says (``writes_prompt_cache``; none: no).
    """

    provider: str
    adapter: ModelAdapter
    cheap_model: str
    capable_model: str
    redactor: Redactor = field(default_factory=default_redactor)
    writes_cache: bool | None = None
    output_tokens: Mapping[str, int] = field(default_factory=dict)
    """Per model id: the output bound its requests carry in place of the caller's (the config file's
    ``[models."ID"] max_output_tokens``); every bound is clamped to the model's context window
    (:meth:`ModelGateway.output_bound`)."""

    def __post_init__(self) -> None:
        if self.writes_cache is None:
            object.__setattr__(self, "writes_cache", getattr(self.adapter, "writes_prompt_cache", False) is True)
        if self.provider != SCRIPTED_PROVIDER:
            ProviderName.parse(self.provider)
            if not isinstance(getattr(self.adapter, "base_url", None), str):
                raise InvalidValueError(kind="model route", reason="the adapter does not say which endpoint it calls")
        if not self.cheap_model or not self.capable_model:
            raise InvalidValueError(kind="model route", reason="name a cheap and a capable model")

    @property
    def base_url(self) -> str | None:
        """The normalized endpoint, or None for the scripted provider (no network)."""
        if self.provider == SCRIPTED_PROVIDER:
            return None
        return normalize_base_url(ProviderName(self.provider), str(getattr(self.adapter, "base_url", "")))

    def model_for(self, tier: ModelTier) -> str:
        return self.cheap_model if tier is ModelTier.CHEAP else self.capable_model


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayReply:
    """A finished call: the reply, what was reserved, the actual cost (maybe unknown), what the ledger
    charged, any overrun, and the task's budget after settling."""

    request_id: str
    provider: str
    model: str
    rung: Rung
    reply: ModelReply
    reserved: Cost
    cost: Cost
    charged: Cost
    overrun: Money | None
    budget: BudgetSummary


@dataclass(frozen=True, slots=True, kw_only=True)
class _Planned:
    task: TaskRow
    plan: model_rows.ModelRequestPlan
    price: price_rows.PriceRevisionRow | None
    reserved: Cost


class ModelGateway:
    """See the module docstring. ``routes`` maps a provider key to its route; ``prices`` are the shipped
    defaults (user revisions recorded in the store win); ``clock`` gives UTC microseconds."""

    def __init__(
        self, db: Database, routes: Mapping[str, ModelRoute] | Sequence[ModelRoute], *,
        prices: Sequence[PriceSnapshot] = DEFAULT_PRICE_SNAPSHOTS, clock: Callable[[], int] = now_us,
        entropy: Callable[[int], bytes] = os.urandom, ladder: Ladder = DEFAULT_LADDER,
        stall_threshold: int = DEFAULT_STALL_THRESHOLD,
    ) -> None:  # fmt: skip
        listed = list(routes.values()) if isinstance(routes, Mapping) else list(routes)
        self._routes = {route.provider: route for route in listed}
        if not self._routes or len(self._routes) != len(listed):
            raise InvalidValueError(kind="model gateway", reason="give at least one route, one per provider")
        self._db = db
        self._catalog = PriceCatalog(db, shipped=prices, clock=clock)
        self._ledger = BudgetLedger(clock=clock)
        self._clock = clock
        self._entropy = entropy
        self._ladder = ladder
        self._stall_threshold = LadderPosition.start(ladder, stall_threshold=stall_threshold).stall_threshold

    def close(self) -> None:
        """Close each route's adapter that holds a connection pool (idempotent): a plan draft's gateway is built
        for that draft (:meth:`ModelAccess.gateway`), and its connections end with it."""
        for route in self._routes.values():
            close = getattr(route.adapter, "close", None)
            if callable(close):
                close()

    @property
    def database(self) -> Database:
        """The database this gateway records in (a run makes its writes patient on it)."""
        return self._db

    def call(
        self, task_id: TaskId, request: ModelRequest, *, position: LadderPosition, idempotency_key: str,
        provider: str | None = None, on_text: TextSink | None = None, more_room: bool = False,
    ) -> GatewayReply:  # fmt: skip
        """Reserve, record the intent, call the model once, settle. Refusals raise (see the module docstring);
        a provider failure is recorded and settled, then re-raised. ``more_room``: the caller asks again a turn
        cut at its output bound (:meth:`output_bound`)."""
        route = self._route(provider)
        rung = position.rung
        model = route.model_for(rung.tier)
        tokens_in = bound_input_tokens(request)  # the model, effort and output bound do not enter the estimate
        bound, _ = self._output_bound(route, model, request.max_output_tokens, input_tokens=tokens_in,
                                      more_room=more_room)
        sent = replace(request, model=model, effort=rung.effort, max_output_tokens=bound)
        planned = self._plan(task_id, route, sent, rung, idempotency_key, tokens_in=tokens_in)
        self._db.write(lambda tx: self._mark_in_flight(tx, planned))
        stream = StreamRedactor(route.redactor) if on_text is not None else None
        sink = None if stream is None or on_text is None else _redacting(stream, on_text)
        try:
            reply = route.adapter.complete(sent, on_text=sink)
        except Exception as error:
            self._db.write(partial(self._record_failure, planned=planned, error=error, redactor=route.redactor))
            raise
        finally:
            if stream is not None and on_text is not None and (rest := stream.flush()):
                on_text(rest)
        return self._db.write(partial(self._settle, planned=planned, reply=reply, route=route, rung=rung))

    @property
    def ladder(self) -> Ladder:
        """The ladder runs through this gateway climb (the config file's ``[ladder] rungs``, else the built-in)."""
        return self._ladder

    @property
    def stall_threshold(self) -> int:
        """Recurrences of one failure on a rung before the ladder climbs."""
        return self._stall_threshold

    def start_position(self) -> LadderPosition:
        """The bottom rung of :attr:`ladder`."""
        return LadderPosition.start(self._ladder, stall_threshold=self._stall_threshold)

    def output_bound(self, model: str, asked: int, *, provider: str | None = None, input_tokens: int | None = None,
                     more_room: bool = False) -> tuple[int, str]:
        """The output bound a request to ``model`` carries when the caller asks ``asked``, and why.

        The model's configured bound (:attr:`ModelRoute.output_tokens`) replaces ``asked`` — except when the
        caller asks again a turn cut at its bound (``more_room``): then the larger of ``asked`` and twice the
        configured bound, so a cut turn is never asked again with the bound that cut it. Whatever is wanted is
        clamped to what the model's context window leaves after the request's estimated ``input_tokens``
        (:func:`~codeflux.domain.budget.bound_input_tokens`; without them, to the window itself): never sent
        beyond it, and the clamp is said. When that room is below :data:`MIN_OUTPUT_TOKENS` (or below ``asked``
        when that is smaller) the request is not sent: :class:`ContextWindowFullError` names the numbers."""
        return self._output_bound(self._route(provider), model, asked, input_tokens=input_tokens,
                                  more_room=more_room)

    def _output_bound(self, route: ModelRoute, model: str, asked: int, *, input_tokens: int | None = None,
                      more_room: bool = False) -> tuple[int, str]:
        configured = route.output_tokens.get(model)
        if configured is None:
            wanted, why = asked, f"{asked:,} asked"
        elif more_room:
            wanted = max(asked, 2 * configured)
            why = f"{wanted:,} to ask again a turn cut at the {configured:,} configured for {model}"
        else:
            wanted, why = configured, f"{configured:,} configured for {model}"
        window = self._window_of(route, model)
        if window is None:
            return wanted, why
        if input_tokens is None:
            if wanted > window:
                return window, f"{why}, clamped to the model's {window:,}-token context window"
            return wanted, why
        room = window - input_tokens
        if wanted <= room:
            return wanted, why
        minimum = min(wanted, MIN_OUTPUT_TOKENS)
        if room < minimum:
            raise ContextWindowFullError(provider=route.provider, model=model, window=window,
                                         input_tokens=input_tokens, minimum=minimum)
        return room, (f"{why}, clamped to the {room:,} tokens the model's {window:,}-token context window leaves "
                      f"after about {input_tokens:,} estimated input tokens")

    def _window_of(self, route: ModelRoute, model: str) -> int | None:
        declared = getattr(route.adapter, "context_window", None)
        if isinstance(declared, int) and not isinstance(declared, bool):
            return declared
        if route.provider == SCRIPTED_PROVIDER:
            return None
        return context_window_of(ProviderName(route.provider), model)

    def context_window(self, position: LadderPosition, *, provider: str | None = None) -> int | None:
        """The context window (tokens) of the model a call from ``position`` uses: the one its adapter declares
        (the scripted provider's script may declare one; declaring none, it has none: None), else the
        capability table's (:func:`~codeflux.providers.capabilities.context_window_of`, with its conservative
        default for a model the table does not list)."""
        route = self._route(provider)
        return self._window_of(route, route.model_for(position.rung.tier))

    def ladder_prices(self, position: LadderPosition, *, provider: str | None = None) -> tuple[ModelPrice, ...]:
        """The price in force (read only; None when unknown) of each model a run from ``position`` may use:
        the current rung's model first, then those of the rungs above it on the ladder, each model once."""
        route = self._route(provider)
        rungs = position.ladder.rungs
        models = dict.fromkeys(route.model_for(rung.tier) for rung in rungs[rungs.index(position.rung):])
        return tuple(ModelPrice(model=model, price=self._catalog.price_of(provider=route.provider, model=model))
                     for model in models)

    def _route(self, provider: str | None) -> ModelRoute:
        if provider is None:
            if len(self._routes) != 1:
                raise InvalidValueError(kind="model call", reason="name the provider: several routes are configured")
            return next(iter(self._routes.values()))
        route = self._routes.get(provider)
        if route is None:
            raise InvalidValueError(kind="model call", reason=f"no route for provider {provider[:40]!r}")
        return route

    # ─── 1 + 2: checks and the intent ────────────────────────────────────────────────────────────

    def _plan(
        self, task_id: TaskId, route: ModelRoute, sent: ModelRequest, rung: Rung, key: str, *, tokens_in: int
    ) -> _Planned:
        digest = hashlib.sha256(f"{route.provider}\x00{rung}\x00{sent!r}".encode()).hexdigest()

        def work(tx: Transaction) -> _Planned | CodefluxError:
            task = require_task(tx, task_id)
            existing = model_rows.model_request_by_key(tx, task_id=task_id, idempotency_key=key)
            if existing is not None:
                if existing.plan.request_sha256 != digest:
                    raise IdempotencyConflictError(scope=f"model-request:{task_id.value}", key=key)
                raise ConflictError(f"model request {existing.request_id} was already made under this key "
                                    f"({existing.state}); a model call is never sent twice")
            if task.state not in _CALLING_STATES:
                raise ModelCallRefusedError(task_id=task_id.value, state=task.state.value)
            refusal = self._approval_refusal(tx, task, route, rung)
            if refusal is not None:
                return self._refuse(tx, task, refusal, pause=False)
            found = budget_rows.budget_and_totals(tx, task_id)  # the budget is read once per call
            if found is None:
                error = BudgetDecisionNeededError(task_id=task_id.value, reason="no budget is set for the task")
                return self._refuse(tx, task, error, pause=True)
            budget = found[0]
            price = self._catalog.price_in_force(tx, provider=route.provider, model=sent.model)
            bound = reservation_bound(None if price is None else price.price, input_tokens=tokens_in,
                                      max_output_tokens=sent.max_output_tokens, model=sent.model,
                                      writes_cache=route.writes_cache is True)
            tokens = tokens_in + sent.max_output_tokens
            verdict = self._ledger.check(tx, task_id, bound=bound, tokens=tokens, summary=summarize_budget(*found))
            if isinstance(verdict, BudgetRefusal):
                named = route.provider if route.provider in _PRICED_PROVIDERS else None
                refused = refusal_error(task_id, verdict, provider=named, model=sent.model,
                                        currency=budget.currency.code, cache_rates=route.writes_cache is True)
                return self._refuse(tx, task, refused, pause=True, bound=bound)
            reserve = reserve_move(bound)
            plan = model_rows.ModelRequestPlan(
                request_id=f"mreq_{self._entropy(16).hex()}", task_id=task_id, idempotency_key=key,
                request_sha256=digest, provider=route.provider, base_url=route.base_url, model=sent.model,
                rung=str(rung), price_snapshot_id=None if price is None else price.snapshot_id,
                currency=budget.currency, reserved_minor=reserve.amount_minor, reserved_reason=reserve.reason,
                reserved_tokens=tokens, max_output_tokens=sent.max_output_tokens,
            )
            at = self._clock()
            model_rows.insert_model_request(tx, plan, at_us=at)
            self._ledger.reserve(tx, verdict, request_id=plan.request_id)
            append_event(tx, session_id=task.session_id, event=ModelCallPlanned(
                request_id=plan.request_id, provider=route.provider, model=plan.model, rung=plan.rung,
                reserved=str(bound), reserved_minor=plan.reserved_minor, currency=budget.currency.code,
                price_snapshot_id=plan.price_snapshot_id,
            ))
            return _Planned(task=task, plan=plan, price=price, reserved=bound)

        outcome = self._db.write(work)
        if isinstance(outcome, CodefluxError):
            raise outcome
        return outcome

    def _approval_refusal(self, tx: Transaction, task: TaskRow, route: ModelRoute, rung: Rung) -> CodefluxError | None:
        base_url = route.base_url
        if base_url is not None:
            provider = ProviderName(route.provider)
            approved = is_default_endpoint(provider, base_url) or price_rows.is_endpoint_approved(
                tx, provider=provider.value, base_url=base_url)  # fmt: skip
            if not approved:
                return EndpointApprovalRequiredError(provider=provider.value, base_url=base_url)
        if rung.asks_before_spending and not price_rows.is_rung_approved(tx, task_id=task.task_id, rung=str(rung)):
            return RungApprovalRequiredError(task_id=task.task_id.value, rung=str(rung))
        return None

    def _refuse(
        self, tx: Transaction, task: TaskRow, error: CodefluxError, *, pause: bool, bound: Cost | None = None
    ) -> CodefluxError:
        """Commit why the call was refused (and pause the task for a budget refusal); the caller raises."""
        if isinstance(error, BudgetExhaustedError):
            summary = self._ledger.summary(tx, task.task_id)
            append_event(tx, session_id=task.session_id, event=BudgetExhausted(
                task_id=task.task_id, hard_limit_minor=summary.hard_limit.minor,
                spent_minor=summary.spent_known.minor, reserved_minor=summary.reserved_known.minor,
                currency=summary.hard_limit.currency.code, spent=str(summary.spent), remaining=str(summary.remaining),
            ))
        append_event(tx, session_id=task.session_id, event=ModelCallRefused(
            task_id=task.task_id, refusal=type(error).__name__, reason=str(error)[:1024],
            reserve=None if bound is None else str(bound)))
        if pause and task.state in _PAUSABLE_STATES:
            change_task_state(tx, task_id=task.task_id, expected_revision=task.revision, state=TaskState.PAUSED,
                              reason=f"model call refused: {error}"[:2048])
        return error

    def _mark_in_flight(self, tx: Transaction, planned: _Planned) -> None:
        model_rows.mark_model_request_in_flight(tx, request_id=planned.plan.request_id, at_us=self._clock())
        append_event(tx, session_id=planned.task.session_id,
                     event=ModelCallStarted(request_id=planned.plan.request_id))

    # ─── 4: settle ───────────────────────────────────────────────────────────────────────────────

    def _settle(
        self, tx: Transaction, *, planned: _Planned, reply: ModelReply, route: ModelRoute, rung: Rung
    ) -> GatewayReply:
        plan = planned.plan
        request_id = plan.request_id
        cost: Cost = UnknownCost.because(f"no price for model {plan.model}")
        if planned.price is not None:
            cost = planned.price.price.cost_of(reply.usage, model=plan.model)
        if isinstance(cost, Money) and cost.currency != plan.currency:
            cost = UnknownCost.because(f"the price is in {cost.currency.code}, the budget in {plan.currency.code}")
        notes = (() if isinstance(cost, Money) else cost.reasons) + ((reply.usage_note,) if reply.usage_note else ())
        end = model_rows.ModelRequestEnd(
            state=ModelRequestState.SUCCEEDED, usage=reply.usage,
            cost_minor=cost.minor if isinstance(cost, Money) else None,
            cost_reason="; ".join(notes)[:1024] or None,
            stop_reason=reply.stop_reason.value,
            provider_request_id=reply.request_id[:256] if reply.request_id else None,
        )
        model_rows.record_model_request_end(tx, request_id=request_id, end=end, at_us=self._clock())
        if isinstance(cost, Money):
            moves = self._ledger.settle(tx, request_id=request_id, actual=cost)
        else:
            moves = self._ledger.record_unknown(tx, request_id=request_id, unknown=cost)
        summary = self._close(tx, planned, moves, state=ModelRequestState.SUCCEEDED, cost=cost)
        return GatewayReply(
            request_id=request_id, provider=route.adapter.display_name, model=plan.model, rung=rung, reply=reply,
            reserved=planned.reserved, cost=cost, charged=charged_by(moves, plan.currency),
            overrun=overrun_of(moves, plan.currency), budget=summary,
        )

    def _record_failure(self, tx: Transaction, *, planned: _Planned, error: Exception, redactor: Redactor) -> None:
        state, kind, processed = _classify_failure(error)
        reason = f"{kind}: the provider may have processed (and billed) the call"
        actual = UnknownCost.because(reason) if processed else None
        end = model_rows.ModelRequestEnd(
            state=state, usage=TokenUsage(), cost_minor=None if processed else 0,
            cost_reason=reason if processed else None, error_kind=kind,
            # A foreign exception's text may hold anything; only its type is kept.
            error_message=redactor.redact(str(error) if isinstance(error, CodefluxError) else type(error).__name__)
            [:1024],
        )
        model_rows.record_model_request_end(tx, request_id=planned.plan.request_id, end=end, at_us=self._clock())
        if actual is None:
            moves = self._ledger.release(tx, request_id=planned.plan.request_id)
        else:
            moves = self._ledger.record_unknown(tx, request_id=planned.plan.request_id, unknown=actual)
        cost = Money.zero(planned.plan.currency) if actual is None else actual
        self._close(tx, planned, moves, state=state, cost=cost)

    def _close(
        self, tx: Transaction, planned: _Planned, moves: tuple[LedgerMove, ...], *, state: ModelRequestState,
        cost: Cost,
    ) -> BudgetSummary:
        """Journal the closed reservation (its entries ``moves`` are written) and a crossed warning."""
        plan, task = planned.plan, planned.task
        after = self._ledger.summary(tx, plan.task_id)
        append_event(tx, session_id=task.session_id, event=ModelCallFinished(
            request_id=plan.request_id, state=state.value, cost=str(cost),
            ledger=tuple(SettlementMove(kind=m.kind.value, amount_minor=m.amount_minor) for m in moves),
            spent=str(after.spent), remaining=str(after.remaining),
        ))
        warning = after.warning
        if warning is not None and crosses_warning(after, moves):
            append_event(tx, session_id=task.session_id, event=BudgetWarning(
                task_id=plan.task_id, warning_minor=warning.minor, spent_minor=after.spent_known.minor,
            ))
        return after


def _redacting(stream: StreamRedactor, sink: TextSink) -> TextSink:
    def feed(chunk: str) -> None:
        released = stream.feed(chunk)
        if released:
            sink(released)

    return feed


def _classify_failure(error: Exception) -> tuple[ModelRequestState, ModelCallErrorKind, bool]:
    """(state, error kind, may have been billed) for an exception raised by an adapter."""
    if isinstance(error, ProviderOutcomeUnknownError):
        return ModelRequestState.OUTCOME_UNKNOWN, ModelCallErrorKind.OUTCOME_UNKNOWN, True
    if isinstance(error, ProviderError):
        kinds = ((ProviderRejectedError, ModelCallErrorKind.REJECTED),
                 (ProviderUnavailableError, ModelCallErrorKind.UNAVAILABLE),
                 (ProviderReplyInvalidError, ModelCallErrorKind.REPLY_INVALID),
                 (ScriptExhaustedError, ModelCallErrorKind.SCRIPT_EXHAUSTED))
        kind = next((name for cls, name in kinds if isinstance(error, cls)), ModelCallErrorKind.PROVIDER_ERROR)
        return ModelRequestState.FAILED, kind, error.may_have_been_processed
    if isinstance(error, CredentialNotFoundError | CredentialStoreUnavailableError):
        # the key is fetched before anything is sent
        return ModelRequestState.FAILED, ModelCallErrorKind.CREDENTIAL_UNAVAILABLE, False
    return ModelRequestState.OUTCOME_UNKNOWN, ModelCallErrorKind.INTERNAL_ERROR, True


# ─── recovery ──────────────────────────────────────────────────────────────────────────────────


def reconcile_interrupted_model_requests(db: Database, *, clock: Callable[[], int] = now_us) -> list[str]:
    """After a crash: every ``planned`` request fails (nothing was sent; its reservation is released) and
    every ``in-flight`` one becomes ``outcome-unknown`` (its bound is charged as an unknown charge that
    blocks paid calls until acknowledged). One transaction each, journaled; nothing is retried."""
    reconciled = []
    books = BudgetLedger(clock=clock)
    for request in db.read(model_rows.unfinished_model_requests):

        def work(tx: Transaction, request: model_rows.ModelRequestRow = request) -> None:
            task = require_task(tx, request.plan.task_id)
            sent = request.state is ModelRequestState.IN_FLIGHT
            reason = "codeflux stopped while the call was in flight; it may have been processed and billed"
            end = model_rows.ModelRequestEnd(
                state=ModelRequestState.OUTCOME_UNKNOWN if sent else ModelRequestState.FAILED, usage=TokenUsage(),
                cost_minor=None if sent else 0, cost_reason=reason if sent else None,
                error_kind=ModelCallErrorKind.INTERRUPTED if sent else ModelCallErrorKind.INTERRUPTED_BEFORE_SENDING,
                error_message=reason if sent else "codeflux stopped before the call was sent",
            )
            model_rows.record_model_request_end(tx, request_id=request.request_id, end=end, at_us=clock())
            if sent:  # a crash leaves the charge for a person, even under a standing allowance
                books.record_unknown(tx, request_id=request.request_id, unknown=UnknownCost.because(reason),
                                     after_interruption=True)
            else:
                books.release(tx, request_id=request.request_id)
            append_event(tx, session_id=task.session_id,
                         event=ModelCallReconciled(request_id=request.request_id, state=end.state.value))

        db.write(work)
        reconciled.append(request.request_id)
    return reconciled
