"""Benchmark: authority classification + identity throughput, and the full tool round trip vs a bare spawn.

Run with `cmd/codeflux-dev bench authority`. Prints:

* classification + identity: bind a raw request to its descriptor, describe the operation (pinned
  executable), derive its sha256 identity and classify it — per request, over a mix of file tools and
  commands (wrappers, shell strings, interpreters);
* the full round trip of `run_command ["true"]` as the product makes it (`submit_tool_request(...,
  intend_if_allowed=True)` then `execute`, what `ToolDriver.submit_and_execute` and the implementation
  loop do): request + its decision + execution intent in one transaction (the exact operation was
  allowed for the task beforehand, so the system decides at submission) → the real worker process runs
  `true` → redacted result committed; against a bare `subprocess.run(["true"])` in the same run, rounds
  interleaved — twice, in the same run: unconfined (mode ``none``) and confined (the strongest box this
  machine offers, bubblewrap here), with the difference at p50 and p99; and bubblewrap's own floor,
  ``bwrap <the same profile> true`` against ``true``. Target: confinement adds ≤ its floor + 1 ms at p50
  (the old ≤ 4× target for the unconfined round trip is retired). For the breakdown it also prints the
  round trip's two calls separately (`submit_tool_request`: one commit carrying the intent; `execute`:
  worker, result commit), the worker's own share (`WorkerHandle.execute` of the same pinned `true` with
  no database work), and the floor any design with two durable commits pays: two bare
  `BEGIN IMMEDIATE; INSERT; COMMIT` on an apsw connection under the same connection policy (WAL,
  `synchronous=FULL`).
* the floor of this design with none of the product's work: the same `Execute` stream pattern (one
  long-lived stream, request → `started` → `result`, through `ExecuteStream`) to
  `tests/bench/_minimal_worker.py`, a separate process serving the worker service's `Execute` with a
  synchronous `grpc.server` whose `Execute` only starts the pinned `true` with piped output and waits
  (no token, validation, pin check, screening, group kill, sweep or redaction); and that floor plus the
  two bare durable commits, as a ratio to the bare spawn — what any implementation of this round trip
  on this transport and connection policy pays before it does any authority or worker work.

Nothing is asserted on time: the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import apsw
import grpc

from codeflux.authority.classify import classify_tool_request
from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.coordinator.runs.program_pins import resolve_executable_pin
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.ids import TaskId, ToolRequestId
from codeflux.domain.operations import ExecutablePin, derive_operation_identity, describe_operation
from codeflux.domain.tasks import TaskState
from codeflux.domain.tools import bind_tool_request
from codeflux.store.connection import open_connection
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.store.tasks import insert_task
from codeflux.worker.client.confinement import ConfinementChoice, choose_confinement
from codeflux.worker.client.handle import WorkerExecution, WorkerHandle
from codeflux.worker.client.streams import ExecuteStream
from codeflux.worker.client.wire import encode_execution
from codeflux.worker.confinement import BoxPaths, Confinement
from codeflux.worker.confinement.landlock import landlock_abi
from codeflux.worker.rpc import WorkerStub

CLASSIFICATIONS = int(os.environ.get("CODEFLUX_BENCH_CLASSIFICATIONS", "20000"))
ROUND_TRIPS = int(os.environ.get("CODEFLUX_BENCH_ROUNDTRIPS", "200"))
ROUNDS = 3
TARGET_EXTRA_S = 0.001  # confinement may add its own floor plus this much at p50
TASK = TaskId.parse("tsk_0123456789abcdef0123456789abcdef")
PIN = ExecutablePin(path="/usr/bin/program", sha256="e" * 64)
MIX: list[tuple[str, dict[str, object]]] = [
    ("read_file", {"path": "src/app.py", "start_line": 1, "line_count": 200}),
    ("grep", {"pattern": "def .*", "path": "src", "glob": "*.py"}),
    ("write_file", {"path": "src/app.py", "content": "print('hello')\n" * 40}),
    ("apply_patch", {"patch": "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-a\n+b\n"}),
    ("run_command", {"argv": ["pytest", "-q", "tests/unit"]}),
    ("run_command", {"argv": ["curl", "-s", "https://example.com/api"]}),
    ("run_command", {"argv": ["sh", "-c", "cd src && make test | tee ../log.txt"]}),
    ("run_command", {"argv": ["env", "FOO=1", "timeout", "30", "python3", "-c", "import urllib.request"]}),
]


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _timed(count: int, step: Callable[[int], object]) -> list[float]:
    latencies = []
    for n in range(count):
        started = time.perf_counter()
        step(n)
        latencies.append(time.perf_counter() - started)
    return latencies


def classify_and_identify(n: int) -> None:
    tool, raw = MIX[n % len(MIX)]
    request = bind_tool_request(tool, raw)
    operation = describe_operation(request, task_id=TASK, executable=PIN if request.descriptor.runs_program else None)
    derive_operation_identity(operation)
    classify_tool_request(request)


def make_repository(root: Path) -> Path:
    repository = root / "repo"
    repository.mkdir()
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1",
                   "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
                   "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    (repository / "README.md").write_text("bench\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "bench"]):
        subprocess.run(["git", "-c", "core.hooksPath=/dev/null", *args], cwd=repository, env=environment,
                       check=True, capture_output=True)
    return repository


def _line(label: str, samples: list[float]) -> str:
    return (f"  {label:28s}p50 {statistics.median(samples) * 1e3:6.2f} ms   p99 "
            f"{_percentile(samples, 0.99) * 1e3:6.2f} ms")


def two_bare_commits(conn: apsw.Connection, n: int) -> None:
    for _ in range(2):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO facts (payload) VALUES (?)", (f"fact {n}",))
        conn.execute("COMMIT")


class MinimalWorker:
    """`_minimal_worker.py` in its own process, and one long-lived `Execute` stream to it."""

    def __init__(self, folder: Path) -> None:
        socket_path = folder / "minimal.sock"
        script = Path(__file__).with_name("_minimal_worker.py")
        self._process = subprocess.Popen([sys.executable, str(script), str(socket_path)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE)
        if self._process.stdout is None or self._process.stdout.readline().strip() != b"ready":
            self.close()
            raise SystemExit("the minimal worker did not start")
        self._channel = grpc.insecure_channel(f"unix:{socket_path}")
        self._stream = ExecuteStream(WorkerStub(self._channel), ())

    def execute(self, execution: WorkerExecution) -> None:
        self._stream.send(encode_execution(execution, lease_token="unused"))
        for event in self._stream.call:
            if event.WhichOneof("event") == "result":
                return
        raise SystemExit("the minimal worker's stream ended without a result")

    def __enter__(self) -> MinimalWorker:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if hasattr(self, "_stream"):
            self._stream.close()
            self._channel.close()
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _expect(holds: bool, problem: str) -> None:
    if not holds:
        raise SystemExit(problem)


def _allow_true_for_the_task(driver: ToolDriver) -> None:
    first = driver.submit_tool_request(TASK, "run_command", {"argv": ["true"]},
                                       idempotency_key=f"warm-{driver.confinement.mode}")
    if first.outcome is DecisionOutcome.PENDING:
        driver.decide(first.request_id, UserDecision.ALLOW_FOR_TASK, reason="benchmark")
    driver.execute(first.request_id)


def _true_bare_and_boxed(choice: ConfinementChoice, worktree: Path,
                         root: Path) -> tuple[Callable[[int], None], Callable[[int], None]]:
    """``true`` run plainly, and in the box ``choice`` gives a worker (bubblewrap's floor)."""
    true = shutil.which("true") or "/bin/true"
    box = Confinement(mode=choice.mode, paths=BoxPaths(worktree=worktree, home=root, tmpdir=root,
                                                       hidden=(root / "data",)),
                      bubblewrap=choice.bubblewrap, landlock_abi=landlock_abi())
    boxed_argv, boxed_program = box.command([true], executable=true, network=False)

    def bare_true(_: int) -> None:
        subprocess.run([true], check=True)

    def boxed_true(_: int) -> None:
        subprocess.run(boxed_argv, executable=boxed_program, check=True)

    return bare_true, boxed_true


@dataclass
class Samples:
    """Seconds per call, by what was timed."""

    bare: list[float] = field(default_factory=list)
    trip: list[float] = field(default_factory=list)
    submit: list[float] = field(default_factory=list)
    execute: list[float] = field(default_factory=list)
    worker: list[float] = field(default_factory=list)
    commit: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    confined: list[float] = field(default_factory=list)
    bare_true: list[float] = field(default_factory=list)
    boxed_true: list[float] = field(default_factory=list)


def main() -> int:
    print(f"authority benchmark: {CLASSIFICATIONS} classifications; {ROUNDS} x {ROUND_TRIPS} round trips per side")
    classify_and_identify(0)
    started = time.perf_counter()
    latencies = _timed(CLASSIFICATIONS, classify_and_identify)
    elapsed = time.perf_counter() - started
    print(f"  classification + identity   {CLASSIFICATIONS / elapsed:8.0f} /s   "
          f"p50 {statistics.median(latencies) * 1e6:6.1f} us   p99 {_percentile(latencies, 0.99) * 1e6:6.1f} us")

    samples = Samples()
    with tempfile.TemporaryDirectory(prefix="codeflux-bench-") as folder:
        root = Path(folder)
        repository = make_repository(root)
        db = open_store(DataLocation(directory=root / "data"), create=True, migrate=True)
        db.write(lambda tx: insert_task(tx, task_id=TASK, repository_root=repository, worktree=repository,
                                        state=TaskState.RUNNING))
        try:
            confined_choice = choose_confinement("auto")
            with ToolDriver(db, state_dir=root / "data" / "workers", confinement=choose_confinement("none"),
                            allow_unconfined=True) as driver, \
                    ToolDriver(db, state_dir=root / "data" / "workers-confined",
                               confinement=confined_choice) as confined_driver:
                for each in (driver, confined_driver):
                    _allow_true_for_the_task(each)
                bare_true, boxed_true = _true_bare_and_boxed(confined_choice, repository, root)

                def confined_round_trip(n: int) -> None:
                    key = f"bench-boxed-{time.perf_counter_ns()}-{n}"
                    record = confined_driver.execute(confined_driver.submit_tool_request(
                        TASK, "run_command", {"argv": ["true"]}, idempotency_key=key,
                        intend_if_allowed=True).request_id)
                    _expect(record.state == "succeeded" and record.confinement == confined_choice.mode.value,
                            f"unexpected confined result {record.state} in {record.confinement}")

                def round_trip(n: int) -> None:
                    key = f"bench-{time.perf_counter_ns()}-{n}"
                    began = time.perf_counter()
                    submitted = driver.submit_tool_request(TASK, "run_command", {"argv": ["true"]},
                                                           idempotency_key=key, intend_if_allowed=True)
                    submitted_at = time.perf_counter()
                    _expect(submitted.outcome is DecisionOutcome.ALLOWED_FOR_TASK and
                            submitted.intended_execution_id is not None,
                            f"unexpected decision {submitted.outcome} (or no intent with the submission)")
                    record = driver.execute(submitted.request_id)
                    samples.execute.append(time.perf_counter() - submitted_at)
                    samples.submit.append(submitted_at - began)
                    _expect(record.state == "succeeded", f"unexpected result {record.state}: {record.message}")

                def bare(_: int) -> None:
                    subprocess.run(["true"], check=True)

                request = bind_tool_request("run_command", {"argv": ["true"]})
                pin = resolve_executable_pin("true", worktree=repository, search_path=os.environ.get("PATH", ""))
                identity = derive_operation_identity(describe_operation(request, task_id=TASK, executable=pin))
                with MinimalWorker(root) as minimal, \
                        WorkerHandle.start(task_id=TASK, worktree=repository, state_dir=root / "solo",
                                           confinement=choose_confinement("none")) as solo:

                    def execution() -> WorkerExecution:
                        return WorkerExecution.for_request(
                            request_id=ToolRequestId.from_entropy(os.urandom(16)), task_id=TASK,
                            operation_identity=identity, request=request, executable=pin)

                    def worker_only(_: int) -> None:
                        solo.execute(execution())

                    def floor(_: int) -> None:
                        minimal.execute(execution())

                    bare_db = open_connection(root / "bare.sqlite3", create=True)
                    bare_db.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, payload TEXT NOT NULL) STRICT")
                    try:
                        floor(0)
                        for _ in range(ROUNDS):
                            samples.bare += _timed(ROUND_TRIPS, bare)
                            samples.trip += _timed(ROUND_TRIPS, round_trip)
                            samples.confined += _timed(ROUND_TRIPS, confined_round_trip)
                            samples.bare_true += _timed(ROUND_TRIPS, bare_true)
                            samples.boxed_true += _timed(ROUND_TRIPS, boxed_true)
                            samples.worker += _timed(ROUND_TRIPS, worker_only)
                            samples.commit += _timed(ROUND_TRIPS, lambda n: two_bare_commits(bare_db, n))
                            samples.floor += _timed(ROUND_TRIPS, floor)
                    finally:
                        bare_db.close()
        finally:
            db.close()

    _report(samples, mode=confined_choice.mode.value)
    return 0


def _report(samples: Samples, *, mode: str) -> None:
    bare_p50, trip_p50 = statistics.median(samples.bare), statistics.median(samples.trip)
    ratio = trip_p50 / bare_p50
    print(_line("bare subprocess.run(true)", samples.bare))
    print(_line("full round trip (true)", samples.trip) + f"   unconfined, {ratio:4.2f}x the bare spawn")
    print(_line(f"full round trip, {mode}", samples.confined))
    added_p50 = statistics.median(samples.confined) - trip_p50
    added_p99 = _percentile(samples.confined, 0.99) - _percentile(samples.trip, 0.99)
    print(f"  confinement adds              p50 {added_p50 * 1e3:6.2f} ms   p99 {added_p99 * 1e3:6.2f} ms")
    print(_line("bare true (exec only)", samples.bare_true))
    print(_line(f"{mode} true", samples.boxed_true))
    box_floor = statistics.median(samples.boxed_true) - statistics.median(samples.bare_true)
    print(f"  {mode} floor                 p50 {box_floor * 1e3:6.2f} ms (the box around /bin/true, no product)")
    print(_line("  submit_tool_request", samples.submit))
    print(_line("  execute", samples.execute))
    worker_p50 = statistics.median(samples.worker)
    print(_line("worker.execute alone", samples.worker)
          + f"   ({worker_p50 / bare_p50:4.2f}x the bare spawn alone)")
    print(_line("2 bare durable commits", samples.commit))
    floor_p50 = statistics.median(samples.floor)
    print(_line("gRPC + spawn floor", samples.floor)
          + f"   ({floor_p50 / bare_p50:4.2f}x; no product work: _minimal_worker.py)")
    floor_total = floor_p50 + statistics.median(samples.commit)
    print(f"  floor + 2 bare commits        {floor_total * 1e3:6.2f} ms   {floor_total / bare_p50:5.2f}x the bare spawn"
          f"   (the product's own work: {(trip_p50 - floor_total) * 1e3:.2f} ms)")
    verdict = "met" if added_p50 <= box_floor + TARGET_EXTRA_S else "NOT met"
    print(f"  confinement's cost            {added_p50 * 1e3:5.2f} ms   target <= its floor + 1 ms = "
          f"{(box_floor + TARGET_EXTRA_S) * 1e3:5.2f} ms at p50   {verdict}")


if __name__ == "__main__":
    sys.exit(main())
