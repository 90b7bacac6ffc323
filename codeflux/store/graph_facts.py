"""The execution graph's read: every event of a session narrowed to the fields the graph shows, in one query.

The graph of a long task must not decode every payload into its typed event, so SQLite extracts only the payload
fields :data:`~codeflux.domain.graph_facts.GRAPH_FIELDS` names for each kind (``payload_json ->> '$.key'``, which
parses each row's JSON once), in one statement: one snapshot of the journal, a row per event, oldest first. A kind
the graph does not show comes back with no values (its payload is not parsed); the projection counts it.
"""

from __future__ import annotations

import functools
import re

from codeflux.domain.graph_facts import FACT_SLOTS, GRAPH_FIELDS, GraphFact
from codeflux.store.database import ReadView

__all__ = ["read_graph_facts"]

_KEY = re.compile(r"[a-z][a-z0-9_]*")


@functools.cache
def _graph_facts_sql() -> str:
    """``SELECT sequence, kind, <value 1>, … <value FACT_SLOTS>``: value ``i`` is a ``CASE`` over the kinds that
    have an ``i``-th field (in :data:`GRAPH_FIELDS` order, the most frequent first)."""
    columns = []
    for slot in range(FACT_SLOTS):
        whens = []
        for kind, keys in GRAPH_FIELDS.items():
            if len(keys) > slot:
                if not _KEY.fullmatch(keys[slot]) or not _KEY.fullmatch(kind.value.replace("-", "_")):
                    raise ValueError(f"{kind.value}: {keys[slot]!r} is not a plain payload key")
                whens.append(f"WHEN '{kind.value}' THEN payload_json ->> '$.{keys[slot]}'")
        columns.append(f"CASE kind {' '.join(whens)} END")
    return (f"SELECT sequence, kind, {', '.join(columns)} FROM events"  # noqa: S608 - literals from GRAPH_FIELDS
            " WHERE session_id = ? ORDER BY sequence")


def read_graph_facts(view: ReadView, session_id: str) -> list[GraphFact]:
    """Every committed event of ``session_id`` as a :class:`~codeflux.domain.graph_facts.GraphFact`, oldest
    first (empty for a session with no events or no such session)."""
    return list(map(GraphFact._make, view.query_all(_graph_facts_sql(), (session_id,))))
