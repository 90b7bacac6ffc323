"""Forecasts: P50/P90 ranges for wall time, tokens and cost, from a transparent heuristic.

A forecast is always an estimate (:data:`ESTIMATE_LABEL`), never a promise and never a limit: the hard
budget is set separately. It is bound to its inputs by a sha256 over them, the heuristic's version and
the price used, so a forecast shown next to a task is provably the one computed for that task.

The heuristic (``transparent-heuristic-v1``; ``docs/money.md`` explains it for users):

- P50 is a sum. A base per task class (seconds / tokens): documentation 180/30k, small-change
  360/50k, bug-fix 720/90k, feature 1200/140k, refactor 1440/160k, migration 1800/200k, security
  2100/220k; plus 60 s and 5k tokens per repository-size bucket (one bucket per started 1,000 files
  and one per started 50 MiB, each kind capped at 10 buckets); plus 45 s and 4k tokens per likely
  file; plus 60 s and 3k tokens per check to run.
- P90 is exactly 2 × P50.
- Tokens split ¾ input, ¼ output (input rounded down); no cache reads are assumed.
- Cost is the price snapshot applied to each token figure (rounded up to the minor unit). P50 is priced
  at the model the run starts with (``inputs.model``); P90 at the dearest of that model and the models of
  the rungs the ladder may climb to (``climb``), since a run that needs P90 tokens is the one that stalls
  and climbs. Without a price for any of those models, or with a price missing a component, that end of
  the range is unknown, with the reasons (``no price for model …``); prices in two currencies make the
  P90 end unknown too (codeflux does not convert currencies).
- Uncertainty reasons are listed, never hidden: ``price-unavailable``, ``scope-not-localized`` (no
  likely files), ``validation-unknown`` (no checks), ``large-repository`` (a size bucket was capped),
  ``wide-likely-file-set`` (more than 20 likely files). The model and effort are bound into the hash
  but do not change the sums in this version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ladder import Effort
from codeflux.domain.money import Cost, CostRange, Money, UnknownCost, require_exact_int
from codeflux.domain.pricing import Price, PriceComponent, TokenUsage

__all__ = [
    "ESTIMATE_LABEL",
    "HEURISTIC_VERSION",
    "CountRange",
    "Forecast",
    "ForecastInputs",
    "ModelPrice",
    "TaskClass",
    "forecast_task",
]

HEURISTIC_VERSION: Final = "transparent-heuristic-v1"
ESTIMATE_LABEL: Final = "Estimate, not a promise."

_FILES_PER_BUCKET: Final = 1_000
_BYTES_PER_BUCKET: Final = 50 * 1024 * 1024
_BUCKET_CAP: Final = 10
_BUCKET_COST: Final = (60, 5_000)
_LIKELY_FILE_COST: Final = (45, 4_000)
_CHECK_COST: Final = (60, 3_000)
_WIDE_FILE_SET: Final = 20
_P90_FACTOR: Final = 2


class TaskClass(StrEnum):
    """What kind of work a task is; it picks the heuristic's base."""

    DOCUMENTATION = "documentation"
    SMALL_CHANGE = "small-change"
    BUG_FIX = "bug-fix"
    FEATURE = "feature"
    REFACTOR = "refactor"
    MIGRATION = "migration"
    SECURITY = "security"


_CLASS_BASE: Final = {
    TaskClass.DOCUMENTATION: (180, 30_000),
    TaskClass.SMALL_CHANGE: (360, 50_000),
    TaskClass.BUG_FIX: (720, 90_000),
    TaskClass.FEATURE: (1_200, 140_000),
    TaskClass.REFACTOR: (1_440, 160_000),
    TaskClass.MIGRATION: (1_800, 200_000),
    TaskClass.SECURITY: (2_100, 220_000),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ForecastInputs:
    """Everything a forecast depends on. Counts are non-negative integers; ``repository_revision`` and
    ``task_fingerprint`` tie the forecast to the repository state and the task text it was made for."""

    task_class: TaskClass
    repository_files: int
    repository_bytes: int
    likely_files: int
    checks: int
    model: str
    effort: Effort
    repository_revision: str = ""
    task_fingerprint: str = ""

    def __post_init__(self) -> None:
        for name in ("repository_files", "repository_bytes", "likely_files", "checks"):
            if require_exact_int(getattr(self, name), kind=f"forecast {name}") < 0:
                raise InvalidValueError(kind="forecast inputs", reason=f"{name} cannot be negative")
        if not self.model:
            raise InvalidValueError(kind="forecast inputs", reason="the model must be named")
        TaskClass(self.task_class)
        Effort(self.effort)

    def sha256(self, price: Price | None, climb: Sequence[ModelPrice] = ()) -> str:
        """The hash binding a forecast to these inputs, the heuristic version, ``price`` and the prices of
        the models the ladder may climb to (``climb``; not part of the material when empty)."""
        material: dict[str, object] = {
            "heuristic": HEURISTIC_VERSION,
            "task_class": self.task_class.value,
            "repository_files": self.repository_files,
            "repository_bytes": self.repository_bytes,
            "likely_files": self.likely_files,
            "checks": self.checks,
            "model": self.model,
            "effort": self.effort.value,
            "repository_revision": self.repository_revision,
            "task_fingerprint": self.task_fingerprint,
            "price": None if price is None else _price_material(price),
        }
        if climb:
            material["climb"] = [{"model": item.model, "price": None if item.price is None
                                  else _price_material(item.price)} for item in climb]
        canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _price_material(price: Price) -> dict[str, str | None]:
    rates: dict[str, str | None] = {"currency": price.currency.code}
    for component in PriceComponent:
        rate = price.rate(component)
        if rate is None and component is PriceComponent.CACHE_WRITE_1H:
            continue  # a component added later is in the material only when set: older materials keep their hash
        rates[component.value] = None if rate is None else f"{rate.numerator}/{rate.denominator}"
    return rates


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrice:
    """The price in force for one model the ladder may use (None: codeflux knows no price for it)."""

    model: str
    price: Price | None

    def __post_init__(self) -> None:
        if not self.model:
            raise InvalidValueError(kind="model price", reason="the model must be named")


@dataclass(frozen=True, slots=True, kw_only=True)
class CountRange:
    """A P50/P90 pair of whole numbers (seconds or tokens)."""

    p50: int
    p90: int

    def __post_init__(self) -> None:
        if not 0 <= self.p50 <= self.p90:
            raise InvalidValueError(kind="count range", reason="needs 0 <= P50 <= P90")

    def __add__(self, other: CountRange) -> CountRange:
        return CountRange(p50=self.p50 + other.p50, p90=self.p90 + other.p90)

    def __str__(self) -> str:
        return f"{self.p50:,} – {self.p90:,}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Forecast:
    """An estimate bound to its inputs: P50 – P90 wall time, tokens and cost, with uncertainty reasons."""

    inputs: ForecastInputs
    inputs_sha256: str
    heuristic: str
    wall_seconds: CountRange
    input_tokens: CountRange
    output_tokens: CountRange
    cost: CostRange
    uncertainty: tuple[str, ...]
    label: str = ESTIMATE_LABEL

    @property
    def tokens(self) -> CountRange:
        return self.input_tokens + self.output_tokens

    def is_for(self, inputs: ForecastInputs, price: Price | None, climb: Sequence[ModelPrice] = ()) -> bool:
        """Whether this forecast was computed for exactly ``inputs``, ``price`` and ``climb``."""
        return self.inputs == inputs and self.inputs_sha256 == inputs.sha256(price, climb)

    def describe(self) -> str:
        """One line for people, the label first: ``Estimate, not a promise. Time 6 – 12 min; …``."""
        minutes = CountRange(p50=-(-self.wall_seconds.p50 // 60), p90=-(-self.wall_seconds.p90 // 60))
        parts = [self.label, f"Time {minutes} min; tokens {self.tokens}; cost {self.cost}."]
        if self.uncertainty:
            parts.append(f"Uncertain: {', '.join(self.uncertainty)}.")
        return " ".join(parts)


def _buckets(amount: int, per_bucket: int) -> tuple[int, bool]:
    started = -(-amount // per_bucket)
    return min(started, _BUCKET_CAP), started > _BUCKET_CAP


def forecast_task(inputs: ForecastInputs, *, price: Price | None, climb: Sequence[ModelPrice] = ()) -> Forecast:
    """The heuristic forecast for ``inputs`` (see the module docstring): P50 priced with ``price`` (the
    starting model's), P90 with the dearest of it and ``climb`` (the other models the ladder may use)."""
    file_buckets, files_capped = _buckets(inputs.repository_files, _FILES_PER_BUCKET)
    byte_buckets, bytes_capped = _buckets(inputs.repository_bytes, _BYTES_PER_BUCKET)
    base_seconds, base_tokens = _CLASS_BASE[inputs.task_class]
    terms = [
        (base_seconds, base_tokens),
        ((file_buckets + byte_buckets) * _BUCKET_COST[0], (file_buckets + byte_buckets) * _BUCKET_COST[1]),
        (inputs.likely_files * _LIKELY_FILE_COST[0], inputs.likely_files * _LIKELY_FILE_COST[1]),
        (inputs.checks * _CHECK_COST[0], inputs.checks * _CHECK_COST[1]),
    ]
    seconds = sum(term[0] for term in terms)
    tokens = sum(term[1] for term in terms)
    input_p50 = tokens * 3 // 4
    input_tokens = CountRange(p50=input_p50, p90=input_p50 * _P90_FACTOR)
    output_tokens = CountRange(p50=tokens - input_p50, p90=(tokens - input_p50) * _P90_FACTOR)

    uncertainty: list[str] = []
    if price is None or any(item.price is None for item in climb):
        uncertainty.append("price-unavailable")
    if inputs.likely_files == 0:
        uncertainty.append("scope-not-localized")
    if inputs.checks == 0:
        uncertainty.append("validation-unknown")
    if files_capped or bytes_capped:
        uncertainty.append("large-repository")
    if inputs.likely_files > _WIDE_FILE_SET:
        uncertainty.append("wide-likely-file-set")

    return Forecast(
        inputs=inputs,
        inputs_sha256=inputs.sha256(price, climb),
        heuristic=HEURISTIC_VERSION,
        wall_seconds=CountRange(p50=seconds, p90=seconds * _P90_FACTOR),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost=CostRange(
            low=_cost(price, inputs.model, input_tokens.p50, output_tokens.p50),
            high=_dearest([_cost(item.price, item.model, input_tokens.p90, output_tokens.p90)
                           for item in (ModelPrice(model=inputs.model, price=price), *climb)]),
        ),
        uncertainty=tuple(uncertainty),
    )


def _cost(price: Price | None, model: str, input_tokens: int, output_tokens: int) -> Cost:
    if price is None:
        return UnknownCost.because(f"no price for model {model}")
    usage = TokenUsage(
        input_tokens=input_tokens, output_tokens=output_tokens, cache_read_tokens=0, cache_write_tokens=0
    )
    return price.cost_of(usage, model=model)


def _dearest(costs: Sequence[Cost]) -> Cost:
    """The highest of ``costs``; unknown (with every reason) when any is unknown or they differ in currency."""
    unknown = [cost for cost in costs if isinstance(cost, UnknownCost)]
    if unknown:
        return UnknownCost(tuple(reason for cost in unknown for reason in cost.reasons))
    known = [cost for cost in costs if isinstance(cost, Money)]
    currencies = sorted({cost.currency.code for cost in known})
    if len(currencies) > 1:
        return UnknownCost.because(f"the ladder's models are priced in {' and '.join(currencies)}")
    return max(known, key=lambda cost: cost.minor)
