"""The narrow record the execution graph is projected from: per event, its sequence, its kind and only the payload
fields the graph shows (:data:`GRAPH_FIELDS`).

The graph of a long task must not decode every payload into its typed event (that alone costs many times a read
of the rows), so the store reads these records straight from ``events.payload_json`` in one query
(``codeflux/store/graph_facts.py``), and :func:`graph_facts_of_events` turns typed events into the very same
records, so there is one projection whichever way the events came (a test compares the two, byte for byte).

A value is what SQLite's ``->>`` gives for the stored JSON value: text, an integer (``true``/``false`` as 1/0), a
real, ``None`` for null or a missing key, and an array or object as its compact JSON text (the projection parses
the few it reads). The graph reads only these fields; a payload whose other fields do not fit its kind (which the
typed decoding would reject) is still drawn from the fields it does read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, NamedTuple, TypeAlias

from codeflux.domain.events import DecodedEvent, EventKind, UnknownEvent

__all__ = ["FACT_SLOTS", "GRAPH_FIELDS", "FactValue", "GraphFact", "IncidentLink", "fact_value",
           "graph_facts_of_events"]

FactValue: TypeAlias = str | int | float | None


class GraphFact(NamedTuple):
    """One journal event as the graph reads it: ``first`` … ``sixth`` hold :data:`GRAPH_FIELDS` of its kind, in
    that order, then ``None`` (all ``None`` for a kind the graph does not show).

    A flat tuple, one per event of a long task: it is what the store's row already is, so reading one costs no
    more objects than the row (the projection unpacks it positionally)."""

    sequence: int
    kind: str
    first: FactValue = None
    second: FactValue = None
    third: FactValue = None
    fourth: FactValue = None
    fifth: FactValue = None
    sixth: FactValue = None

    @property
    def values(self) -> tuple[FactValue, ...]:
        """The :data:`FACT_SLOTS` values."""
        return self[2:]


GRAPH_FIELDS: Final[Mapping[EventKind, tuple[str, ...]]] = MappingProxyType({
    # The kinds a run writes most come first: the store's query tests a row's kind against them in this order.
    EventKind.AUTHORITY_DECIDED: ("request_id", "decision_id", "outcome", "decided_by", "denied"),
    EventKind.TOOL_REQUESTED: ("request_id", "tool", "operation", "needs", "decision_id", "outcome"),
    EventKind.TOOL_EXECUTION_INTENDED: ("request_id", "execution_id", "consumed_approval_id"),
    EventKind.TOOL_EXECUTION_FINISHED: ("request_id", "execution_id", "state", "exit_code", "failure_kind"),
    EventKind.MODEL_CALL_PLANNED: ("request_id", "provider", "model", "rung", "reserved"),
    EventKind.MODEL_CALL_STARTED: ("request_id",),
    EventKind.MODEL_CALL_FINISHED: ("request_id", "state", "cost"),
    EventKind.AGENT_MESSAGE: ("text",),
    EventKind.STAGE_VERDICTS_RECORDED: ("attempt", "stages"),
    EventKind.TASK_STATE_CHANGED: ("to",),
    EventKind.RUN_ATTEMPT_OPENED: ("attempt", "run_id", "plan_revision"),
    EventKind.RUN_ATTEMPT_ENDED: ("attempt", "stopped_at", "outcomes"),
    EventKind.ATTEMPT_SENT_BACK: ("attempt", "gate", "rung", "decision", "fingerprint"),
    EventKind.MODEL_CALL_RECONCILED: ("request_id", "state"),
    EventKind.MODEL_CALL_REFUSED: ("refusal", "reason"),
    EventKind.TASK_CREATED: ("task_id", "state", "title"),
    EventKind.PLAN_REVISION_RECORDED: ("revision", "created_by", "sha256"),
    EventKind.PLAN_APPROVED: ("revision", "by", "sha256"),
    EventKind.PLAN_SENT_BACK: ("revision", "by", "sha256"),
    EventKind.PATCH_STORED: ("kind", "bytes", "diff_identity"),
    EventKind.ACCEPT_CONFLICTED: ("branch", "conflicting_paths"),
    EventKind.ACCEPT_STARTED: ("mode", "branch", "paths"),
    EventKind.ACCEPT_RESOLVED: ("resolution", "by", "reason"),
    EventKind.TASK_ACCEPTED: ("branch", "kind", "landed_head"),
    EventKind.DELIVERY_RECORDED: ("attempt", "human_acceptance", "deliver"),
    EventKind.EFFECT_OUTCOME_RECORDED: ("outcome", "kind", "item", "by"),
})
"""Per event kind the graph shows, the stored payload keys it reads (the keys of ``to_payload``)."""

FACT_SLOTS: Final = len(GraphFact._fields) - 2
"""How many values every :class:`GraphFact` carries (as many as the kind with the most fields needs: a test checks)."""

_NONE_VALUES: Final[tuple[FactValue, ...]] = (None,) * FACT_SLOTS
_KEYS_BY_KIND: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({kind.value: keys
                                                                       for kind, keys in GRAPH_FIELDS.items()})


def fact_value(raw: object) -> FactValue:
    """The JSON value ``raw`` (as ``json.loads`` or ``to_payload`` gives it) as SQLite's ``->>`` returns it."""
    if raw is None or isinstance(raw, str | float):
        return raw
    if isinstance(raw, bool):
        return int(raw)
    if isinstance(raw, int):
        return raw
    return json.dumps(raw, separators=(",", ":"), ensure_ascii=False)


def _values(kind: str, payload: Mapping[str, object]) -> tuple[FactValue, ...]:
    keys = _KEYS_BY_KIND.get(kind)
    if keys is None:
        return _NONE_VALUES
    values = tuple(fact_value(payload.get(key)) for key in keys)
    return values + _NONE_VALUES[len(values):]


def graph_facts_of_events(events: Iterable[tuple[int, DecodedEvent]]) -> Iterator[GraphFact]:
    """The records of typed events given as ``(sequence, event)``: each payload as it is stored (an
    :class:`~codeflux.domain.events.UnknownEvent`'s as it was read), narrowed to :data:`GRAPH_FIELDS`."""
    for sequence, event in events:
        kind = event.kind if isinstance(event, UnknownEvent) else event.KIND.value
        yield GraphFact(sequence, kind, *_values(kind, event.to_payload()))


@dataclass(frozen=True, slots=True, kw_only=True)
class IncidentLink:
    """An incident whose state rows name the task: ``proposed`` (the task was proposed from it), ``fixed`` (its
    acceptance fixed it), ``regressed`` (it was seen again after that fix); ``summary`` is the fingerprint's line."""

    incident_id: str
    summary: str
    state: str
    occurrences: int
    proposed: bool
    fixed: bool
    regressed: bool
