"""Benchmark: `cmd/codeflux-dev bench memory` (issue 19) — each part in a module of its own, run in turn.

- the execution graph of a 10k-event task against a bare SELECT of the same events (``_graph_projection.py``;
  target ≤ 3×).

Nothing is asserted on time: the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

from _graph_projection import run_graph_projection_benchmark

PARTS = (run_graph_projection_benchmark,)

if __name__ == "__main__":
    for part in PARTS:
        part()
