"""The thresholds of the pipeline's gates, and how many stages run at once: each a setting in the ``settings``
table with its default named here.

A threshold is one whole number stored as ``{"value": N}`` under its key; the keys are the closed list
:data:`THRESHOLDS` (never taken from input). :func:`threshold_of` reads one through the pipeline's
:class:`~codeflux.pipeline.ports.SettingsPort` and says where the value came from — the evidence shows both, so a
reader sees ``10`` from ``default, not set``, ``12`` from ``setting pipeline.atom-complexity.max, revision 3`` or ``11``
from ``config file [pipeline] atom-complexity.max``: a stored setting wins over the user's config file
(``$XDG_CONFIG_HOME/codeflux/config.toml``, :mod:`codeflux.domain.user_config`), which wins over the default.
A stored value that is not a whole number in the allowed range is not used: the stage says so and is ``blocked``
rather than judged against a value nobody chose. :class:`StoredSettings` is the port over the coordinator's database;
:func:`set_threshold` stores a value by compare-and-set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from codeflux.domain.errors import InvalidValueError
from codeflux.pipeline.ports import SettingsPort
from codeflux.store.database import Database, Transaction
from codeflux.store.settings import put_setting, read_setting

__all__ = [
    "ADVERSARIAL_TIMEOUT_S",
    "ATOM_COMPLEXITY_MAX",
    "ATOM_FUZZ_BUDGET_S",
    "ATOM_GROWTH_BASE_SIZE",
    "ATOM_GROWTH_BUDGET_MS",
    "ATOM_MUTATION_SCORE_MIN",
    "ATOM_VERIFICATION_RUNS",
    "NON_FUNCTIONAL_RATIO_PCT",
    "NON_FUNCTIONAL_SLACK_MS",
    "PATH_COVERAGE_MIN",
    "PIPELINE_CONCURRENCY",
    "REPETITION_RUNS",
    "THRESHOLDS",
    "ConfiguredSettingsPort",
    "StoredSettings",
    "Threshold",
    "ThresholdValue",
    "set_threshold",
    "threshold_of",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Threshold:
    """One threshold setting: its key, default and allowed range (inclusive), and what it bounds."""

    key: str
    default: int
    minimum: int
    maximum: int
    meaning: str


ATOM_COMPLEXITY_MAX: Final = Threshold(
    key="pipeline.atom-complexity.max", default=10, minimum=1, maximum=1000,
    meaning="the highest cyclomatic complexity (radon) an atom may have in stage 16 atom-complexity")

ATOM_FUZZ_BUDGET_S: Final = Threshold(
    key="pipeline.atom-fuzz.budget-s", default=20, minimum=1, maximum=300,
    meaning="the time budget, in seconds, stage 12 atom-fuzz fuzzes each parsing or decoding atom for (Hypothesis)")

ATOM_GROWTH_BUDGET_MS: Final = Threshold(
    key="pipeline.atom-complexity.growth-budget-ms", default=5000, minimum=100, maximum=120_000,
    meaning="the time budget, in milliseconds, of timing one atom at three sizes in stage 16 (advisory growth)")

ATOM_GROWTH_BASE_SIZE: Final = Threshold(
    key="pipeline.atom-complexity.growth-base-size", default=1000, minimum=10, maximum=100_000,
    meaning="the smallest of the three input sizes (b, 4b, 16b) stage 16 times an atom at (advisory growth)")

ATOM_MUTATION_SCORE_MIN: Final = Threshold(
    key="pipeline.atom-mutation.min-score", default=70, minimum=0, maximum=100,
    meaning="the lowest mutation score, in percent (killed or timed out ÷ judged), an atom may have in stage 13 "
            "atom-mutation")

ATOM_VERIFICATION_RUNS: Final = Threshold(
    key="pipeline.atom-verification.runs", default=3, minimum=1, maximum=20,
    meaning="how many times stage 11 atom-verification runs the atoms' tests, each in a random order with its own "
            "recorded seed")

PATH_COVERAGE_MIN: Final = Threshold(
    key="pipeline.path-coverage.min-percent", default=90, minimum=0, maximum=100,
    meaning="the lowest branch coverage, in percent (branch arcs taken ÷ branch arcs leaving the diff's changed "
            "lines inside atoms), stage 25 path-coverage accepts")

ADVERSARIAL_TIMEOUT_S: Final = Threshold(
    key="pipeline.adversarial.timeout-s", default=10, minimum=1, maximum=300,
    meaning="how long, in seconds, stage 31 adversarial lets one command run on one hostile input before calling it "
            "a hang")

REPETITION_RUNS: Final = Threshold(
    key="pipeline.repetition.runs", default=3, minimum=1, maximum=20,
    meaning="how many times stage 32 repetition runs the whole suite, each in a random order with its own recorded "
            "seed (stage 34 non-functional times the same runs against as many on the base revision)")

NON_FUNCTIONAL_RATIO_PCT: Final = Threshold(
    key="pipeline.non-functional.ratio-pct", default=150, minimum=100, maximum=1000,
    meaning="stage 34 non-functional (advisory) flags a suite slower than max(this percentage of the base "
            "revision's time, base + the slack)")

NON_FUNCTIONAL_SLACK_MS: Final = Threshold(
    key="pipeline.non-functional.slack-ms", default=500, minimum=0, maximum=600_000,
    meaning="the absolute slack, in milliseconds, stage 34 non-functional allows over the base revision's suite time")

PIPELINE_CONCURRENCY: Final = Threshold(
    key="pipeline.concurrency", default=2, minimum=1, maximum=4,
    meaning="how many independent stages of phases B–D and F may run at once (one writing scratch copies at a time; "
            "stage 32 always alone); the verdicts are the same at any value")

THRESHOLDS: Final[tuple[Threshold, ...]] = (ATOM_COMPLEXITY_MAX, ATOM_FUZZ_BUDGET_S, ATOM_GROWTH_BASE_SIZE,
                                            ATOM_GROWTH_BUDGET_MS, ATOM_MUTATION_SCORE_MIN, ATOM_VERIFICATION_RUNS,
                                            PATH_COVERAGE_MIN, ADVERSARIAL_TIMEOUT_S, REPETITION_RUNS,
                                            NON_FUNCTIONAL_RATIO_PCT, NON_FUNCTIONAL_SLACK_MS, PIPELINE_CONCURRENCY)
"""Every threshold key the pipeline reads (the closed list)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdValue:
    """The value in force and where it came from (``problem`` set: the stored value was refused)."""

    threshold: Threshold
    value: int
    source: str
    problem: str | None = None

    def to_evidence(self) -> dict[str, object]:
        shown: dict[str, object] = {"key": self.threshold.key, "value": self.value, "source": self.source,
                                    "default": self.threshold.default}
        if self.problem is not None:
            shown["problem"] = self.problem
        return shown


def _valid(threshold: Threshold, value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)
            and threshold.minimum <= value <= threshold.maximum)


@runtime_checkable
class ConfiguredSettingsPort(Protocol):
    """A settings port that also knows the config file's values (below a stored setting, above the default)."""

    def configured_value(self, key: str) -> int | None: ...


def threshold_of(settings: SettingsPort | None, threshold: Threshold) -> ThresholdValue:
    """The value of ``threshold`` (see the module docstring)."""
    if threshold not in THRESHOLDS:
        raise InvalidValueError(kind="threshold", reason="not one of the pipeline's thresholds")
    if settings is None:
        return ThresholdValue(threshold=threshold, value=threshold.default,
                              source="default, this run reads no settings")
    stored = settings.read_setting(threshold.key)
    configured = settings.configured_value(threshold.key) if isinstance(settings, ConfiguredSettingsPort) else None
    if stored is None and configured is not None and _valid(threshold, configured):
        return ThresholdValue(threshold=threshold, value=configured,
                              source=f"config file [pipeline] {threshold.key.removeprefix('pipeline.')}")
    if stored is None:
        return ThresholdValue(threshold=threshold, value=threshold.default, source="default, not set")
    value, revision = stored
    chosen = value.get("value")
    source = f"setting {threshold.key}, revision {revision}"
    if not _valid(threshold, chosen):
        return ThresholdValue(threshold=threshold, value=threshold.default, source=source,
                              problem=f"the setting {threshold.key} is not a whole number from {threshold.minimum} "
                                      f"to {threshold.maximum}")
    return ThresholdValue(threshold=threshold, value=int(str(chosen)), source=source)


class StoredSettings:
    """:class:`~codeflux.pipeline.ports.SettingsPort` over the coordinator's database (read-only), with the config
    file's thresholds (``configured``: full key → value, checked when the file was read) below it."""

    def __init__(self, db: Database, configured: Mapping[str, int] | None = None) -> None:
        self._db = db
        self._configured = dict(configured or {})

    def configured_value(self, key: str) -> int | None:
        return self._configured.get(key)

    def read_setting(self, key: str) -> tuple[Mapping[str, object], int] | None:
        row = self._db.read(lambda view: read_setting(view, key))
        return None if row is None else (row.value, row.revision)


def set_threshold(db: Database, threshold: Threshold, value: int, *, expected_revision: int | None) -> int:
    """Store ``value`` for ``threshold`` if its revision is still ``expected_revision`` (None: never set);
    returns the new revision. Raises :class:`InvalidValueError` outside the allowed range."""
    if threshold not in THRESHOLDS or not _valid(threshold, value):
        raise InvalidValueError(kind="threshold", reason=f"{threshold.key} takes a whole number from "
                                                         f"{threshold.minimum} to {threshold.maximum}")

    def work(tx: Transaction) -> int:
        return put_setting(tx, threshold.key, {"value": value}, expected_revision=expected_revision)

    return db.write(work)
