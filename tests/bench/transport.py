"""Benchmark: the session stream over the WebSocket envelope, against SQLite read straight in the same run.

Run with `cmd/codeflux-dev bench transport`. Measures, on a real loopback server (`start_in_thread`) with a
real SQLite journal:

1. replay of N committed events (default 10,000) to the Python binary-envelope client, events/s, against
   reading the same rows with a bare apsw SELECT (the raw baseline) — and the ratio; both one frame per event
   (a subscriber that does not ask for batches) and in batch frames (`batched`, what the web client asks for,
   issue 20 item 5: target ≥ 0.5× the bare read);
2. commit-to-client latency of live events (p50/p99): from the moment the COMMIT returned (a
   post-commit callback stamps it) to the moment the client has the decoded frame, one event at a time;
3. cold start to the first served page: a fresh process serving a fresh data directory until the web
   client's index.html is served (launch URL redeemed, then `GET /`), against a bare `python -c pass`.
   It runs `codeflux start --no-browser` when the CLI has that command, else `serve_coordinator` from a
   `python -c` (and says which);
4. the web client on a 10,000-event task in headless Chromium (`_transport_browser.py`): time to usable, click
   latency, scroll frames and DOM nodes, printed beside issue 20's targets (usable <= 1 s, click <= 200 ms).

Nothing is asserted on time: the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path

from codeflux.api.v1 import product_pb2
from codeflux.coordinator.spending.gateway import ModelGateway
from codeflux.domain.events import AgentMessage
from codeflux.server.client import BrowserSession, EnvelopeClient, connect_address, frame_events, redeem_launch
from codeflux.server.serve import start_in_thread
from codeflux.services import session
from codeflux.services.app import SCRIPTED_DEMO_LABEL, CoordinatorApp
from codeflux.services.registry import MethodTable
from codeflux.store.connection import open_connection
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store

EVENTS = int(os.environ.get("CODEFLUX_BENCH_EVENTS", "10000"))
LIVE = int(os.environ.get("CODEFLUX_BENCH_LIVE_EVENTS", "500"))
ROUNDS = 3
COLD_ROUNDS = 3
SUBSCRIBE = "/codeflux.v1.SessionService/Subscribe"
EVENT = AgentMessage(conversation_id=1, attempt=1, text="x" * 200, truncated=False, redacted=False)
REPO = Path(__file__).resolve().parents[2]


class _NoModelCalls:
    label = SCRIPTED_DEMO_LABEL
    scripted = True

    def gateway(self, phases: object) -> ModelGateway:
        raise RuntimeError("the transport benchmark never calls a model")

    def use_scripted_demo(self) -> None:
        raise RuntimeError("the transport benchmark never switches providers")


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def fill_journal(db: Database, count: int) -> None:
    """Setup (not timed): ``count`` events, 500 per transaction."""
    done = 0
    while done < count:
        batch = min(500, count - done)

        def work(tx: Transaction, n: int = batch) -> None:
            for _ in range(n):
                append_event(tx, session_id=SYSTEM_SESSION_ID, event=EVENT)

        db.write(work)
        done += batch


def bare_read_seconds(path: Path) -> float:
    """The raw baseline: one apsw connection, one SELECT of the same rows, each row materialised."""
    conn = open_connection(path)
    try:
        started = time.perf_counter()
        rows = list(conn.execute(
            "SELECT session_id, sequence, kind, payload_json, created_at_us FROM events"
            " WHERE session_id = ? AND sequence > 0 ORDER BY sequence", (SYSTEM_SESSION_ID,)))
        elapsed = time.perf_counter() - started
    finally:
        conn.close()
    if len(rows) != EVENTS:
        raise RuntimeError(f"expected {EVENTS} rows, read {len(rows)}")
    return elapsed


async def replay_seconds(ws_url: str, session: BrowserSession, *, batched: bool = False) -> float:
    async with await EnvelopeClient.connect(ws_url, session=session) as client:
        started = time.perf_counter()
        stream = await client.open(
            SUBSCRIBE, product_pb2.SubscribeRequest(session_id=SYSTEM_SESSION_ID, batched=batched),
            product_pb2.SessionFrame)
        expected = 1
        async for frame in stream:
            if frame.HasField("replay_boundary"):
                elapsed = time.perf_counter() - started
                await stream.cancel()
                break
            events = frame_events(frame)  # every event materialised, as the bare read materialises every row
            if list(map(itemgetter(1), events)) != list(range(expected, expected + len(events))):
                raise RuntimeError(f"gap or duplicate after {expected - 1}")
            expected += len(events)
    if expected - 1 != EVENTS:
        raise RuntimeError(f"replayed {expected - 1} of {EVENTS}")
    return elapsed


async def live_latencies(ws_url: str, session: BrowserSession, db: Database) -> list[float]:
    committed_at: dict[int, float] = {}
    latencies: list[float] = []

    def commit_one() -> None:
        def work(tx: Transaction) -> None:
            event = append_event(tx, session_id=SYSTEM_SESSION_ID, event=EVENT)
            tx.after_commit(lambda: committed_at.__setitem__(event.sequence, time.perf_counter()))

        db.write(work)

    async with await EnvelopeClient.connect(ws_url, session=session) as client:
        stream = await client.open(SUBSCRIBE, product_pb2.SubscribeRequest(
            session_id=SYSTEM_SESSION_ID, after_sequence=EVENTS), product_pb2.SessionFrame)
        boundary = await anext(stream)
        if not boundary.HasField("replay_boundary"):
            raise RuntimeError("expected the replay boundary first")
        for _ in range(LIVE):
            writer = threading.Thread(target=commit_one)
            writer.start()
            frame = await anext(stream)
            received = time.perf_counter()
            await asyncio.to_thread(writer.join)
            latencies.append(received - committed_at[frame.event.sequence])
        await stream.cancel()
    return latencies


# --- cold start -----------------------------------------------------------------------------------------

_SERVE_SNIPPET = """
import asyncio, sys
from collections.abc import Iterator
from pathlib import Path
from codeflux.server.launch import LaunchTokens
from codeflux.server.serve import serve_coordinator
from codeflux.services.app import CoordinatorApp
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
location = DataLocation(directory=Path(sys.argv[1]))
db = open_store(location, create=True, migrate=True)
try:
    from codeflux.services.methods import build_method_table
    app = CoordinatorApp(db=db, location=location, models=None, version="bench")  # type: ignore[arg-type]
    table = build_method_table(app)
except Exception:
    from codeflux.services import session
    from codeflux.services.registry import MethodTable
    app = CoordinatorApp(db=db, location=location, models=None, version="bench")  # type: ignore[arg-type]
    table = MethodTable.of(session.methods(app))
tokens = LaunchTokens()
def ready(info):
    print(f"open: {info.url}/launch?token={tokens.issue()}", flush=True)
asyncio.run(serve_coordinator(app, table, host="127.0.0.1", port=0, tokens=tokens,
            socket_path=location.directory / "coordinator" / "coordinator.sock", ready=ready, stop=asyncio.Event()))
"""


def _cli_has_start(env: dict[str, str]) -> bool:
    done = subprocess.run([sys.executable, "-m", "codeflux.cli.main", "start", "--help"], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=60, check=False)
    return done.returncode == 0


def _stop(process: subprocess.Popen[str]) -> None:
    """Stop a coordinator started in its own session: SIGTERM to its group, SIGKILL after 60 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


def cold_start_seconds(folder: Path, *, use_cli: bool, env: dict[str, str]) -> float:
    data = folder / f"data-{time.monotonic_ns()}"
    if use_cli:
        argv = [sys.executable, "-m", "codeflux.cli.main", "start", "--data-dir", str(data),
                "--address", "127.0.0.1:0", "--no-browser"]
    else:
        argv = [sys.executable, "-c", _SERVE_SNIPPET, str(data)]
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               cwd=REPO, start_new_session=True)
    try:
        url = None
        assert process.stdout is not None
        for line in process.stdout:
            found = re.search(r"open: (http://\S+/launch\?token=\S+)", line)
            if found:
                url = found.group(1)
                break
        if url is None:
            raise RuntimeError(f"the server exited {process.wait()} without printing its URL")
        session = redeem_launch(url)
        host_port = url.split("/")[2]
        name, port = host_port.rsplit(":", 1)
        connection = http.client.HTTPConnection(connect_address(name), int(port), timeout=30)
        connection.request("GET", "/", headers={"Cookie": session.cookie, "Host": host_port})
        response = connection.getresponse()
        body = response.read()
        elapsed = time.perf_counter() - started
        connection.close()
        if response.status != 200 or b"<html" not in body.lower():
            raise RuntimeError(f"the first page was {response.status}")
        return elapsed
    finally:
        _stop(process)


@contextlib.contextmanager
def coordinator_process(data: Path, env: dict[str, str]) -> Iterator[tuple[str, BrowserSession]]:
    """``codeflux start --no-browser`` serving the data directory ``data`` in its own process (as a person runs it:
    the browser, or another Python client, is a different process); yields its WebSocket URL and a signed-in
    session, and stops it after."""
    argv = [sys.executable, "-m", "codeflux.cli.main", "start", "--data-dir", str(data), "--address", "127.0.0.1:0",
            "--no-browser"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO,
                               start_new_session=True)
    try:
        assert process.stdout is not None
        url = next((found.group(1) for line in process.stdout
                    if (found := re.search(r"open: (http://\S+/launch\?token=\S+)", line))), None)
        if url is None:
            raise RuntimeError(f"`codeflux start` exited {process.wait()} without printing its URL")
        host_port = url.split("/")[2]
        yield f"ws://{host_port}/ws", redeem_launch(url)
    finally:
        _stop(process)


def bare_interpreter_seconds(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, env=env, cwd=REPO, timeout=60)
    return time.perf_counter() - started


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="cf-bench-") as scratch:
        folder = Path(scratch)
        env = dict(os.environ, HOME=str(folder / "home"), PYTHONPATH=str(REPO))
        (folder / "home").mkdir()
        location = DataLocation(directory=folder / "data")
        db = open_store(location, create=True, migrate=True)
        app = CoordinatorApp(db=db, location=location, models=_NoModelCalls(), version="bench")
        try:
            fill_journal(db, EVENTS)
            server = start_in_thread(MethodTable.of(session.methods(app)))
            try:
                signed_in = redeem_launch(server.launch_url())
                replay, batched, bare = [], [], []
                for _ in range(ROUNDS):  # interleaved so drift affects every side alike
                    bare.append(bare_read_seconds(location.database))
                    replay.append(asyncio.run(replay_seconds(server.ws_url, signed_in)))
                    batched.append(asyncio.run(replay_seconds(server.ws_url, signed_in, batched=True)))
                # The same batched replay from `codeflux start` in its own process, as the browser meets it (above,
                # the coordinator shares this process, and its interpreter lock, with the client).
                own_process, bare_beside = [], []
                with coordinator_process(location.directory, env) as (own_url, own_session):
                    for _ in range(ROUNDS):
                        bare_beside.append(bare_read_seconds(location.database))
                        own_process.append(asyncio.run(replay_seconds(own_url, own_session, batched=True)))
                latencies = asyncio.run(live_latencies(server.ws_url, signed_in, db))
            finally:
                server.stop()
        finally:
            db.close()

        use_cli = _cli_has_start(env)
        cold, bare_start = [], []
        for _ in range(COLD_ROUNDS):
            bare_start.append(bare_interpreter_seconds(env))
            cold.append(cold_start_seconds(folder, use_cli=use_cli, env=env))

    replay_rate = EVENTS / statistics.median(replay)
    bare_rate = EVENTS / statistics.median(bare)
    print(f"transport benchmark: {EVENTS} committed events replayed x{ROUNDS}; {LIVE} live events; "
          f"{COLD_ROUNDS} cold starts")
    print(f"  bare SQLite read (one SELECT)   {bare_rate:12.0f} events/s")
    replay_ms = statistics.median(replay) * 1000
    print(f"  WebSocket replay to the client  {replay_rate:12.0f} events/s   ({replay_ms:.0f} ms)")
    print(f"  replay ratio (WebSocket / bare)  {replay_rate / bare_rate:10.3f}x")
    batched_rate = EVENTS / statistics.median(batched)
    print(f"  batched replay to the client    {batched_rate:12.0f} events/s   "
          f"({statistics.median(batched) * 1000:.0f} ms)")
    print(f"  batched ratio (WebSocket / bare) {batched_rate / bare_rate:10.3f}x   (target >= 0.5x)")
    own_rate, beside_rate = EVENTS / statistics.median(own_process), EVENTS / statistics.median(bare_beside)
    print(f"  batched, `codeflux start` in its own process: {own_rate:.0f} events/s "
          f"({statistics.median(own_process) * 1000:.0f} ms); bare read beside it {beside_rate:.0f} events/s; "
          f"ratio {own_rate / beside_rate:.3f}x")
    print(f"  live commit-to-client           p50 {_percentile(latencies, 0.50) * 1000:6.2f} ms"
          f"   p99 {_percentile(latencies, 0.99) * 1000:6.2f} ms")
    what = "codeflux start --no-browser" if use_cli else "python -c serve_coordinator (no `codeflux start` yet)"
    print(f"  cold start to first page ({what})  median {statistics.median(cold) * 1000:6.0f} ms"
          f"   (min {min(cold) * 1000:.0f}, max {max(cold) * 1000:.0f})")
    print(f"  bare `python -c pass`           median {statistics.median(bare_start) * 1000:6.0f} ms"
          f"   ratio {statistics.median(cold) / statistics.median(bare_start):.1f}x")
    if os.environ.get("CODEFLUX_BENCH_BROWSER", "1") != "0":  # 0: skip the browser half
        from _transport_browser import print_browser_figures, run_browser_figures  # beside this script

        print_browser_figures(run_browser_figures())
    return 0


if __name__ == "__main__":
    sys.exit(main())
