"""The model gateway's own work per call, apart from the machine's noise (not run by `cmd/codeflux-dev bench`).

The route of `bench gateway`'s HTTP half — provider ``anthropic``, an approved loopback endpoint, the shipped price,
cache writes — with an in-process adapter that returns a canned reply (no network, no server thread), so each call
is exactly the gateway's checks, three transactions and their commits. It prints the thread CPU time and the wall
time per call (p10/p50 after 100 warm calls). ``CODEFLUX_BENCH_GATEWAY_CALLS`` sets the calls (default 1,500).

Deterministic figures (instructions, whatever the load; docs/benchmarks.md, "bench gateway"): run it under callgrind
with 60 and with 160 calls and divide the difference of the totals by 100::

    CODEFLUX_BENCH_GATEWAY_CALLS=60 PYTHONPATH=. valgrind --tool=callgrind --callgrind-out-file=cg.60 \\
        .artifacts/venv/bin/python tests/bench/_gateway_cpu.py

(``callgrind_annotate --inclusive=yes cg.60 | grep APSWCursor_execute`` gives the SQLite part the same way.)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.domain.models import ModelReply, ModelRequest, StopReason, TextPart
from codeflux.domain.pricing import TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.providers.wire import TextSink
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.bench.gateway import HTTP_MODEL, HTTP_REQUEST, START, budgeted_task

CALLS = int(os.environ.get("CODEFLUX_BENCH_GATEWAY_CALLS", "1500"))
WARM = 100
REPLY = ModelReply(provider="Anthropic", model=HTTP_MODEL, parts=(TextPart(text="A short answer."),),
                   stop_reason=StopReason.END_TURN, request_id="req_canned",
                   usage=TokenUsage(input_tokens=1200, output_tokens=300, cache_read_tokens=0, cache_write_tokens=0))


class CannedAdapter:
    """The Anthropic route's adapter as the gateway sees it, answering at once with :data:`REPLY`."""

    base_url = "http://127.0.0.1:9"
    display_name = "Anthropic"
    writes_prompt_cache = True

    def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelReply:
        return REPLY


def quantile(samples: list[int], fraction: float) -> float:
    return sorted(samples)[int(fraction * len(samples))] / 1000


def main() -> int:
    cpu: list[int] = []
    wall: list[int] = []
    with tempfile.TemporaryDirectory(prefix="codeflux-bench-") as folder:
        root = Path(folder)
        db = open_store(DataLocation(directory=root / "data"), create=True, migrate=True)
        try:
            approve_model_endpoint(db, provider=ProviderName.ANTHROPIC, base_url=CannedAdapter.base_url + "/")
            route = ModelRoute(provider="anthropic", adapter=CannedAdapter(), cheap_model=HTTP_MODEL,
                               capable_model=HTTP_MODEL)
            task_id = budgeted_task(db, root, "cpu")
            gateway = ModelGateway(db, [route])
            for n in range(CALLS):
                started_cpu, started = time.thread_time_ns(), time.perf_counter_ns()
                gateway.call(task_id, HTTP_REQUEST, position=START, idempotency_key=f"call-{n}")
                cpu.append(time.thread_time_ns() - started_cpu)
                wall.append(time.perf_counter_ns() - started)
        finally:
            db.close()
    if CALLS <= WARM:
        print(f"gateway work: {CALLS} calls made (figures need more than {WARM})")
        return 0
    cpu, wall = cpu[WARM:], wall[WARM:]
    print(f"gateway work per call ({CALLS - WARM} calls after {WARM} warm, canned reply, load "
          f"{os.getloadavg()[0]:.2f}): thread CPU p10 {quantile(cpu, 0.1):.1f} us, p50 {quantile(cpu, 0.5):.1f} us; "
          f"wall p50 {quantile(wall, 0.5):.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
