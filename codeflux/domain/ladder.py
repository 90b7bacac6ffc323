"""The model ladder: which model and effort the loop uses, and when a stall makes it climb.

A rung is ``tier:effort`` (``cheap:low``): the tier names a model configured per provider (a cheap one
and a capable one), the effort maps to the provider's own setting. The default ladder is
``cheap:low → cheap:max → capable:low → capable:high``: effort is spent before the model changes,
because more effort costs more tokens at the same rate while a new model raises the rate of every
token. ``capable:max`` is not on the default ladder; a person adds it, and the gateway asks before the
first call on it (:attr:`Rung.asks_before_spending`).

The loop climbs only on a **stall**: the same normalized failure fingerprint recorded
``stall_threshold`` times (default 3) on one rung. Recurrences count, not only consecutive repeats, so
a different failure in between does not reset the count. Infrastructure failures (429, a transport
error, an unavailable provider) never count: the model did not fail, the plumbing did.

A fingerprint is computed from the gate's name and the failure output. When the output names failing
tests (pytest ``FAILED``/``ERROR`` lines, unittest ``FAIL:`` headers, Go ``--- FAIL:``) the fingerprint
is the *set* of those names, so fixing one of three red tests is progress. Otherwise the text is
normalized: lowercased, with volatile parts masked — UUIDs, ``0x`` addresses, IP addresses and ports,
timestamps, the directories of absolute paths, ``file:line:col`` positions, durations, hex ids of 7+
digits, decimals and integers of 4+ digits — whitespace collapsed and cut to 400 characters.

A failed **tool call** is fingerprinted by :func:`fingerprint_tool_failure` from what the operation was:
the tool, its target (the path of a file tool, the program and first argument of a command) and the
failure kind, plus the failure's detail normalized with *every* number masked (line numbers, counts and
ids vary between tries of the same mistake). So three misses on three different files are three
fingerprints — unrelated mistakes never add up to a stall — while the same miss on the same file three
times is one, recurring.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Final

from codeflux.domain.errors import InvalidValueError

__all__ = [
    "DEFAULT_LADDER",
    "DEFAULT_STALL_THRESHOLD",
    "Effort",
    "FailureFingerprint",
    "FailureKind",
    "Ladder",
    "LadderDecision",
    "LadderPosition",
    "LadderStep",
    "ModelTier",
    "Rung",
    "failing_test_names",
    "fingerprint_failure",
    "fingerprint_tool_failure",
    "normalize_failure_text",
]

DEFAULT_STALL_THRESHOLD: Final = 3
_THRESHOLD_RANGE: Final = range(1, 11)
_SUMMARY_LENGTH: Final = 400


class ModelTier(StrEnum):
    """Which configured model of the provider a rung uses."""

    CHEAP = "cheap"
    CAPABLE = "capable"


class Effort(StrEnum):
    """How hard the model is asked to think; each adapter maps it to its provider's setting."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    MAX = "max"


_TIERS: Final = tuple(ModelTier)
_EFFORTS: Final = tuple(Effort)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rung:
    """One step of the ladder, written ``tier:effort``."""

    tier: ModelTier
    effort: Effort

    @classmethod
    def parse(cls, text: str) -> Rung:
        """``"cheap:low"`` as a rung, or :class:`InvalidValueError` naming the valid tiers and efforts."""
        tier, separator, effort = text.partition(":")
        if not separator or tier not in set(ModelTier) or effort not in set(Effort):
            raise InvalidValueError(
                kind="ladder rung",
                reason=f"write tier:effort with tier in {', '.join(_TIERS)} and effort in {', '.join(_EFFORTS)}",
            )
        return cls(tier=ModelTier(tier), effort=Effort(effort))

    @property
    def cost_rank(self) -> int:
        """Order by expected cost: every effort of the cheap model comes before the capable one."""
        return _TIERS.index(self.tier) * len(_EFFORTS) + _EFFORTS.index(self.effort)

    @property
    def asks_before_spending(self) -> bool:
        """True for ``capable:max``: the gateway stops to ask before the first call on it."""
        return self.tier is ModelTier.CAPABLE and self.effort is Effort.MAX

    def __str__(self) -> str:
        return f"{self.tier}:{self.effort}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ladder:
    """Rungs in strictly ascending cost; non-empty, no duplicates."""

    rungs: tuple[Rung, ...]

    def __post_init__(self) -> None:
        if not self.rungs:
            raise InvalidValueError(kind="ladder", reason="it needs at least one rung")
        ranks = [rung.cost_rank for rung in self.rungs]
        if len(set(ranks)) != len(ranks):
            raise InvalidValueError(kind="ladder", reason="a rung appears twice")
        if ranks != sorted(ranks):
            raise InvalidValueError(kind="ladder", reason="rungs must go from cheapest to most expensive")

    @classmethod
    def parse(cls, texts: Iterable[str]) -> Ladder:
        """A ladder from rung texts such as ``["cheap:low", "capable:high"]``."""
        return cls(rungs=tuple(Rung.parse(text) for text in texts))

    def with_rung(self, rung: Rung) -> Ladder:
        """This ladder with ``rung`` added in its cost position (how a person adds ``capable:max``)."""
        if rung in self.rungs:
            return self
        return Ladder(rungs=tuple(sorted((*self.rungs, rung), key=lambda r: r.cost_rank)))

    def next_after(self, rung: Rung) -> Rung | None:
        """The rung above ``rung``, or None at the top."""
        index = self.rungs.index(rung)
        return self.rungs[index + 1] if index + 1 < len(self.rungs) else None

    def __str__(self) -> str:
        return " → ".join(str(rung) for rung in self.rungs)


DEFAULT_LADDER: Final = Ladder.parse(["cheap:low", "cheap:max", "capable:low", "capable:high"])


class FailureKind(StrEnum):
    """Whether a failure says something about the model's work."""

    CHECK = "check"  # a gate was evaluated and did not hold: counts toward a stall
    INFRASTRUCTURE = "infrastructure"  # 429, transport, provider unavailable: never counts


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureFingerprint:
    """What makes two failures "the same": the gate plus the failing test set or the normalized text."""

    gate: str
    digest: str
    summary: str


# Applied in order to lowercased text; earlier masks protect their matches from later ones. Directory
# parts of paths go first: a directory named like an address or a number ("0x0", "2024") is still a path.
_MASKS: Final = (
    (re.compile(r"(?<![\w.~-])(?:/[^\s/:'\"()\[\]<>,;]+)+/(?=[^\s/])"), "<path>/"),
    (re.compile(r"\b[a-z]:\\(?:[^\s\\:'\"]+\\)+"), "<path>\\\\"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b0x[0-9a-f]+\b"), "<addr>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b"), "<addr>"),
    (re.compile(r"\[[0-9a-f:]*:[0-9a-f:]*\](?::\d{1,5})?"), "<addr>"),
    (re.compile(r"\blocalhost:\d{1,5}\b"), "<addr>"),
    (re.compile(r"(\.[a-z0-9_]+):\d+(?::\d+)?\b"), r"\1:<line>"),
    (re.compile(r"\bline \d+\b"), "line <line>"),
    (
        re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b"),
        "<duration>",
    ),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b"), "<hex>"),
    (re.compile(r"\b\d+\.\d+\b"), "#"),
    (re.compile(r"\b\d{4,}\b"), "#"),
)
_WHITESPACE: Final = re.compile(r"\s+")
_TEST_LINES: Final = (
    re.compile(r"^(?:FAILED|ERROR) (?P<name>\S+::\S+)", re.MULTILINE),
    re.compile(r"^(?P<name>\S+::\S+) (?:FAILED|ERROR)\b", re.MULTILINE),
    re.compile(r"^\s*--- FAIL: (?P<name>\S+)", re.MULTILINE),
    re.compile(r"^(?:FAIL|ERROR): (?P<method>\w+) \((?P<where>[\w.]+)\)", re.MULTILINE),
)


def normalize_failure_text(text: str) -> str:
    """``text`` lowercased, volatile parts masked, whitespace collapsed, cut to 400 characters."""
    normalized = text.lower()
    for pattern, replacement in _MASKS:
        normalized = pattern.sub(replacement, normalized)
    return _WHITESPACE.sub(" ", normalized).strip()[:_SUMMARY_LENGTH]


def failing_test_names(text: str) -> frozenset[str]:
    """The failing tests ``text`` names (pytest, unittest, Go formats), each normalized; maybe empty."""
    names: set[str] = set()
    for pattern in _TEST_LINES:
        for match in pattern.finditer(text):
            groups = match.groupdict()
            name = f"{groups['where']}.{groups['method']}" if groups.get("method") else groups["name"]
            names.add(normalize_failure_text(name))
    return frozenset(names)


def fingerprint_failure(*, gate: str, output: str, failing_tests: Iterable[str] | None = None) -> FailureFingerprint:
    """The fingerprint of a failure at ``gate``.

    ``failing_tests`` (from junit XML, say) wins when given and non-empty; otherwise the failing tests
    named in ``output``; otherwise ``output`` normalized.
    """
    if not gate:
        raise InvalidValueError(kind="failure fingerprint", reason="the gate must be named")
    tests = frozenset(normalize_failure_text(name) for name in failing_tests or ()) or failing_test_names(output)
    if tests:
        summary = "failing tests: " + ", ".join(sorted(tests))
        material = "tests\x00" + "\x00".join(sorted(tests))
    else:
        summary = normalize_failure_text(output)
        material = "text\x00" + summary
    digest = hashlib.sha256(f"{gate}\x00{material}".encode()).hexdigest()
    return FailureFingerprint(gate=gate, digest=digest, summary=summary[:_SUMMARY_LENGTH])


_NUMBER: Final = re.compile(r"\d+")


def fingerprint_tool_failure(*, tool: str, target: str, kind: str, detail: str = "") -> FailureFingerprint:
    """The fingerprint of a failed tool call (see the module docstring): gate ``tool:<tool>``; material the
    ``target``, the failure ``kind`` and either the failing tests ``detail`` names or ``detail`` normalized
    with every number masked. Distinct targets always give distinct fingerprints."""
    if not tool:
        raise InvalidValueError(kind="failure fingerprint", reason="the tool must be named")
    tests = failing_test_names(detail)
    shape = "tests: " + ", ".join(sorted(tests)) if tests else _NUMBER.sub("#", normalize_failure_text(detail))
    material = json.dumps([target, kind, shape], ensure_ascii=False)
    digest = hashlib.sha256(f"tool:{tool}\x00{material}".encode()).hexdigest()
    summary = f"{tool} {target} ({kind}): {shape}" if target else f"{tool} ({kind}): {shape}"
    return FailureFingerprint(gate=f"tool:{tool}", digest=digest, summary=summary[:_SUMMARY_LENGTH])


class LadderDecision(StrEnum):
    """What the loop does after a failure is recorded."""

    STAY = "stay"  # no stall yet: try again on this rung
    CLIMB = "climb"  # stalled: continue on the next rung
    ASK_BEFORE_CLIMB = "ask-before-climb"  # stalled, and the next rung asks before spending
    EXHAUSTED = "exhausted"  # stalled on the top rung


@dataclass(frozen=True, slots=True, kw_only=True)
class LadderStep:
    """The decision, the rung to use next (or to ask for), and the fingerprint that stalled, if any."""

    decision: LadderDecision
    rung: Rung
    stalled_on: FailureFingerprint | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LadderPosition:
    """Where a run is on its ladder and how often each fingerprint recurred on the current rung."""

    ladder: Ladder = DEFAULT_LADDER
    rung: Rung = field(default_factory=lambda: DEFAULT_LADDER.rungs[0])
    stall_threshold: int = DEFAULT_STALL_THRESHOLD
    recurrences: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        if self.rung not in self.ladder.rungs:
            raise InvalidValueError(kind="ladder position", reason=f"{self.rung} is not on the ladder {self.ladder}")
        if type(self.stall_threshold) is not int or self.stall_threshold not in _THRESHOLD_RANGE:
            raise InvalidValueError(kind="ladder position", reason="the stall threshold must be 1 to 10")

    @classmethod
    def start(
        cls, ladder: Ladder = DEFAULT_LADDER, *, stall_threshold: int = DEFAULT_STALL_THRESHOLD
    ) -> LadderPosition:
        """The bottom rung of ``ladder`` with no failures recorded."""
        return cls(ladder=ladder, rung=ladder.rungs[0], stall_threshold=stall_threshold)

    @classmethod
    def resumed(cls, used: Iterable[Rung], ladder: Ladder = DEFAULT_LADDER, *,
                stall_threshold: int = DEFAULT_STALL_THRESHOLD) -> LadderPosition:
        """Where a task's run goes on after a pause, a resume or a restart: the highest rung of ``ladder`` its
        model calls already used (the ladder never descends within a task), else the bottom rung. Rungs not on
        ``ladder`` are ignored; failure counts start afresh."""
        reached = [rung for rung in used if rung in ladder.rungs]
        top = max(reached, key=ladder.rungs.index, default=ladder.rungs[0])
        return cls(ladder=ladder, rung=top, stall_threshold=stall_threshold)

    def continued(self, sent_back: Sequence[tuple[str, str, str]]) -> tuple[LadderPosition, int]:
        """This position (where a new run of the task starts) with the failures its earlier runs recorded on
        this same rung, and how many repairs they used — so a pause or a restart neither resets the repair bound
        nor forgets a recurring failure. ``sent_back``: the task's journaled send-backs, oldest first, as
        ``(rung, fingerprint digest, ladder decision)``; only the trailing ones on this rung count (a climb
        started this rung afresh)."""
        counts: dict[str, int] = {}
        repairs = 0
        for rung, digest, decision in reversed(sent_back):
            if rung != str(self.rung):
                break
            counts[digest] = counts.get(digest, 0) + 1
            repairs += decision == LadderDecision.STAY.value
        return replace(self, recurrences=tuple(sorted(counts.items()))), repairs

    def count_of(self, fingerprint: FailureFingerprint) -> int:
        """How often ``fingerprint`` was recorded on the current rung."""
        return dict(self.recurrences).get(fingerprint.digest, 0)

    def record(
        self, kind: FailureKind, fingerprint: FailureFingerprint | None = None
    ) -> tuple[LadderPosition, LadderStep]:
        """Record one failure and decide. A ``check`` failure needs its fingerprint; an
        ``infrastructure`` failure changes nothing and always means stay."""
        if kind is FailureKind.INFRASTRUCTURE:
            return self, LadderStep(decision=LadderDecision.STAY, rung=self.rung)
        if fingerprint is None:
            raise InvalidValueError(kind="ladder failure", reason="a check failure needs its fingerprint")
        counts = dict(self.recurrences)
        counts[fingerprint.digest] = counts.get(fingerprint.digest, 0) + 1
        after = replace(self, recurrences=tuple(sorted(counts.items())))
        if counts[fingerprint.digest] < self.stall_threshold:
            return after, LadderStep(decision=LadderDecision.STAY, rung=self.rung)
        upper = self.ladder.next_after(self.rung)
        if upper is None:
            return after, LadderStep(decision=LadderDecision.EXHAUSTED, rung=self.rung, stalled_on=fingerprint)
        if upper.asks_before_spending:
            return after, LadderStep(decision=LadderDecision.ASK_BEFORE_CLIMB, rung=upper, stalled_on=fingerprint)
        return self.climbed_to(upper), LadderStep(decision=LadderDecision.CLIMB, rung=upper, stalled_on=fingerprint)

    def climbed_to(self, rung: Rung) -> LadderPosition:
        """The position on ``rung`` (the next one; after a person approved it, for an asking rung) with
        every count reset."""
        if rung != self.ladder.next_after(self.rung):
            raise InvalidValueError(kind="ladder position", reason=f"{rung} is not the rung above {self.rung}")
        return replace(self, rung=rung, recurrences=())
