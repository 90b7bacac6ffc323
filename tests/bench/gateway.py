"""Benchmark: the model gateway's per-call overhead (reserve, journal, settle) with the scripted provider.

Run with `cmd/codeflux-dev bench gateway`. In the same run, rounds interleaved, it times:

* the scripted adapter's ``complete`` called directly (the raw baseline: no database at all);
* ``ModelGateway.call`` with the same scripted turns: checks + price + reservation + intent (one
  transaction), ``in-flight`` (one transaction), the adapter call, usage + cost + ledger + events (one
  transaction) — three durable commits, which the design requires (intent before the effect, one
  transaction per outcome);
* three bare durable commits (``BEGIN IMMEDIATE; INSERT; COMMIT`` on an apsw connection with the same
  WAL + ``synchronous=FULL`` policy), the floor any design with three commits pays on this disk.

It prints p50/p99 of each, the overhead (gateway − direct) and the ratios gateway / direct and
overhead / three bare commits.

Then the same over HTTP (issue 21): the Anthropic adapter against a loopback server that answers in the Messages API's
wire format (tests/fixtures/provider_servers.py), called directly (the bare call: request, SSE parse, usage)
and through the gateway with the key held in memory for the run (a key loader that returns the held ``Secret``, as
:class:`~codeflux.coordinator.provider_keys.HeldKeys` does — no credential store read in the path). It prints the
overhead per call against the target: at most 1.5 ms at p50 above the bare call.

Nothing is asserted on time: the figures go to docs/benchmarks.md. ``CODEFLUX_BENCH_GATEWAY_CALLS`` changes the
calls per round (each round uses a fresh task).
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import apsw

from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.credentials.secret import Secret
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest
from codeflux.domain.money import USD, Money
from codeflux.domain.pricing import Price, TokenUsage
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.providers.scripted import ScriptedAdapter, ScriptedTurn
from codeflux.redact import Redactor
from codeflux.store.connection import open_connection
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.store.tasks import insert_task
from tests.fixtures.provider_servers import ProviderServer, a_test_key, anthropic_message, json_reply

START = LadderPosition.start()
CALLS = int(os.environ.get("CODEFLUX_BENCH_GATEWAY_CALLS", "300"))
ROUNDS = 3
USAGE = TokenUsage(input_tokens=1200, output_tokens=300, cache_read_tokens=0, cache_write_tokens=0)
REQUEST = ModelRequest(model="scripted-cheap", system="You are a benchmark.",
                       messages=(Message.user_text("Say something short." * 20),), max_output_tokens=2048)
HTTP_MODEL = "claude-sonnet-4-5"  # priced in the shipped snapshot
HTTP_REQUEST = ModelRequest(model=HTTP_MODEL, system="You are a benchmark.",
                            messages=(Message.user_text("Say something short." * 20),), max_output_tokens=2048)
TARGET_OVERHEAD_MS = 1.5


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def timed(count: int, step: Callable[[int], object]) -> list[float]:
    latencies = []
    for n in range(count):
        started = time.perf_counter()
        step(n)
        latencies.append(time.perf_counter() - started)
    return latencies


def turns(count: int) -> list[ScriptedTurn]:
    return [ScriptedTurn(text="A short scripted answer.", usage=USAGE) for _ in range(count)]


def line(label: str, samples: list[float]) -> str:
    return (f"  {label:<34} p50 {statistics.median(samples) * 1e6:8.1f} us   "
            f"p99 {percentile(samples, 0.99) * 1e6:8.1f} us")


def main() -> int:
    print(f"gateway benchmark: {ROUNDS} x {CALLS} calls per side, scripted provider (not a model), "
          "WAL + synchronous=FULL")
    with tempfile.TemporaryDirectory(prefix="codeflux-bench-") as folder:
        root = Path(folder)
        db = open_store(DataLocation(directory=root / "data"), create=True, migrate=True)
        bare = open_connection(root / "bare.sqlite3", create=True)
        bare.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, payload TEXT NOT NULL) STRICT")
        try:
            PriceCatalog(db).set_user_price(
                provider="scripted", model="scripted-cheap", effective_date=dt.date(2026, 1, 1),
                price=Price.from_per_million_tokens(currency=USD, input_per_million="1.00", output_per_million="2.00"),
            )
            direct_samples: list[float] = []
            gateway_samples: list[float] = []
            commit_samples: list[float] = []
            for round_number in range(ROUNDS):
                direct = ScriptedAdapter(turns(CALLS))
                direct_samples += timed(CALLS, lambda _, adapter=direct: adapter.complete(REQUEST))
                gateway, task_id = fresh_gateway(db, root, round_number)
                gateway_samples += timed(CALLS, lambda n, gateway=gateway, task_id=task_id: gateway.call(
                    task_id, REQUEST, position=START, idempotency_key=f"call-{n}"))
                commit_samples += timed(CALLS, lambda n: three_bare_commits(bare, n))
        finally:
            bare.close()
            db.close()

    direct_p50, gateway_p50 = statistics.median(direct_samples), statistics.median(gateway_samples)
    commits_p50 = statistics.median(commit_samples)
    overhead = gateway_p50 - direct_p50
    print(line("scripted adapter, direct", direct_samples))
    print(line("through the gateway", gateway_samples))
    print(line("3 bare durable commits", commit_samples))
    print(f"  overhead per call (p50)            {overhead * 1e3:8.3f} ms")
    print(f"  gateway / direct (p50)             {gateway_p50 / direct_p50:8.1f}x")
    print(f"  overhead / 3 bare commits (p50)    {overhead / commits_p50:8.2f}x")
    over_http(commits_p50)
    return 0


def _replies(server: ProviderServer, count: int) -> None:
    message = anthropic_message(content=[{"type": "text", "text": "A short answer."}],
                                usage={"input_tokens": 1200, "output_tokens": 300, "cache_read_input_tokens": 0,
                                       "cache_creation_input_tokens": 0})
    server.enqueue(*(json_reply(message) for _ in range(count)))


def over_http(commits_p50: float) -> None:
    """The Anthropic adapter on a loopback server, directly and through the gateway (key held for the run);
    ``commits_p50``: three bare durable commits measured in this run (the floor of the gateway's design)."""
    print(f"gateway over HTTP: {ROUNDS} x {CALLS} calls per side, Anthropic's Messages wire format on 127.0.0.1")
    key = Secret(a_test_key())

    def held(_: ProviderName) -> Secret:
        return key

    with tempfile.TemporaryDirectory(prefix="codeflux-bench-") as folder, ProviderServer() as server:
        root = Path(folder)
        db = open_store(DataLocation(directory=root / "data"), create=True, migrate=True)
        redactor = Redactor()
        try:
            approve_model_endpoint(db, provider=ProviderName.ANTHROPIC, base_url=server.base_url + "/")
            direct_samples: list[float] = []
            gateway_samples: list[float] = []
            with AnthropicAdapter(base_url=server.base_url, key_loader=held, redactor=redactor) as adapter:
                for round_number in range(ROUNDS):
                    _replies(server, CALLS)
                    direct_samples += timed(CALLS, lambda _: adapter.complete(HTTP_REQUEST))
                    _replies(server, CALLS)
                    route = ModelRoute(provider="anthropic", adapter=adapter, cheap_model=HTTP_MODEL,
                                       capable_model=HTTP_MODEL, redactor=redactor)
                    task_id = budgeted_task(db, root, f"http-{round_number}")
                    gateway = ModelGateway(db, [route])
                    gateway_samples += timed(CALLS, lambda n, gateway=gateway, task_id=task_id: gateway.call(
                        task_id, HTTP_REQUEST, position=START, idempotency_key=f"call-{n}"))
        finally:
            db.close()
    direct_p50, gateway_p50 = statistics.median(direct_samples), statistics.median(gateway_samples)
    overhead_ms = (gateway_p50 - direct_p50) * 1e3
    print(line("Anthropic adapter, bare call", direct_samples))
    print(line("through the gateway (key held)", gateway_samples))
    print(f"  overhead per call (p50)            {overhead_ms:8.3f} ms   (target <= {TARGET_OVERHEAD_MS} ms: "
          f"{'met' if overhead_ms <= TARGET_OVERHEAD_MS else 'not met'})")
    print(f"  of which 3 durable commits (p50)   {commits_p50 * 1e3:8.3f} ms   (intent before the call, in-flight, "
          "settlement: one transaction each, fsynced)")
    print(f"  overhead beyond those commits      {overhead_ms - commits_p50 * 1e3:8.3f} ms")


def budgeted_task(db: Database, root: Path, key: str) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=root / "repo", worktree=root / "worktree",
                                    state=TaskState.RUNNING))
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=10**12, currency=USD), expected_revision=None,
                                 idempotency_key=f"bench-{key}")
    return task_id


def fresh_gateway(db: Database, root: Path, round_number: int) -> tuple[ModelGateway, TaskId]:
    task_id = budgeted_task(db, root, str(round_number))
    route = ModelRoute(provider="scripted", adapter=ScriptedAdapter(turns(CALLS)), cheap_model="scripted-cheap",
                       capable_model="scripted-capable")
    return ModelGateway(db, [route]), task_id


def three_bare_commits(conn: apsw.Connection, n: int) -> None:
    for _ in range(3):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO facts (payload) VALUES (?)", (f"fact {n}",))
        conn.execute("COMMIT")


if __name__ == "__main__":
    sys.exit(main())
