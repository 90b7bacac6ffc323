"""Benchmark: how fast the ``codeflux`` command starts, against a bare ``python3 -c pass`` in the same run.

Run with `cmd/codeflux-dev bench cli`. Times, as separate processes with rounds interleaved:

* ``python3 -c pass`` with the venv's interpreter — the same Python codeflux runs on (the raw baseline);
* ``codeflux version`` and ``codeflux --help`` through the venv's console script (the product path: the entry's
  hardening, the lazy command table, one command module);
* for information, ``python -m codeflux --version``, and ``codeflux version`` started with a credential-like
  variable in its environment (it re-executes itself without it: two interpreter starts, by design);
* the single-file binary's ``version`` and ``--help`` (reported, no target: each start unpacks the archive into
  ``$TMPDIR``, PyInstaller onefile's cost): ``CODEFLUX_BENCH_CLI_BINARY``, else ``.artifacts/dist/codeflux`` when
  ``cmd/codeflux-dev dist`` built one (its build time is printed: an old binary is measured as it is).

Bytecode is cached the way an installed wheel has it (pip compiles on install): the runs get
``PYTHONPYCACHEPREFIX=.artifacts/pycache`` (as the dev script sets it; also when this script is run directly)
and one untimed warm-up each. Credential-like variables of this shell are left out (they would make every run
re-execute). Target (issue 21 item 9): each wall-clock ratio to the baseline at p50 ≤ 4×; the CPU-time ratio is
printed beside it (less disturbed by other work on the machine). Nothing is asserted on time;
the figures go to docs/benchmarks.md. ``CODEFLUX_BENCH_CLI_RUNS`` changes the runs per side and round.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from codeflux.worker.hardening import environment_without_secrets

REPO = Path(__file__).resolve().parents[2]
RUNS = int(os.environ.get("CODEFLUX_BENCH_CLI_RUNS", "10"))
ROUNDS = 3
TARGET = 4.0


def _environment() -> dict[str, str]:
    kept, _ = environment_without_secrets(os.environ)
    kept.pop("PYTHONDONTWRITEBYTECODE", None)
    kept["PYTHONPYCACHEPREFIX"] = str(REPO / ".artifacts" / "pycache")
    return kept


def _cpu_of_children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run_once(argv: Sequence[str], environment: Mapping[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU (user + system, of the process and its children) milliseconds of one run."""
    cpu_before, started = _cpu_of_children(), time.perf_counter()
    done = subprocess.run(argv, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed, cpu = time.perf_counter() - started, _cpu_of_children() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    return elapsed * 1000, cpu * 1000


def main() -> int:
    environment = _environment()
    python = sys.executable
    console_script = str(Path(python).with_name("codeflux"))
    if not Path(console_script).is_file():
        raise SystemExit(f"no console script at {console_script}: run `cmd/codeflux-dev setup`")
    sides: dict[str, tuple[list[str], Mapping[str, str]]] = {
        "python3 -c pass": ([python, "-c", "pass"], environment),
        "codeflux version": ([console_script, "version"], environment),
        "codeflux --help": ([console_script, "--help"], environment),
        "python -m codeflux --version": ([python, "-m", "codeflux", "--version"], environment),
        "codeflux version, re-executed": ([console_script, "version"], {**environment, "BENCH_API_KEY": "x"}),
    }
    built = REPO / ".artifacts" / "dist" / "codeflux"
    binary = os.environ.get("CODEFLUX_BENCH_CLI_BINARY") or (str(built) if built.is_file() else None)
    if binary:
        sides["binary version"] = ([binary, "version"], environment)
        sides["binary --help"] = ([binary, "--help"], environment)
        made = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(Path(binary).stat().st_mtime))
        print(f"single binary: {binary} ({Path(binary).stat().st_size / 1e6:.0f} MB, built {made})")
    else:
        print("single binary: none (`cmd/codeflux-dev dist` builds .artifacts/dist/codeflux); not measured")
    for argv, env in sides.values():  # warm-up: bytecode written once, files in the page cache
        _run_once(argv, env)
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(ROUNDS):
        for _ in range(RUNS):
            for name, (argv, env) in sides.items():
                elapsed, used = _run_once(argv, env)
                wall[name].append(elapsed)
                cpu[name].append(used)
    print(f"cli benchmark: {ROUNDS} x {RUNS} runs per side, interleaved; bytecode cached; "
          f"Python {sys.version.split()[0]} ({python}); load average {os.getloadavg()[0]:.2f}")
    for name in sides:
        ordered = sorted(wall[name])
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        print(f"  {name:<32} wall p50 {statistics.median(wall[name]):7.1f} ms   p90 {p90:7.1f} ms   "
              f"cpu p50 {statistics.median(cpu[name]):7.1f} ms")
    base, base_cpu = statistics.median(wall["python3 -c pass"]), statistics.median(cpu["python3 -c pass"])
    for name in sides:
        if name == "python3 -c pass":
            continue
        ratio, cpu_ratio = statistics.median(wall[name]) / base, statistics.median(cpu[name]) / base_cpu
        held = name in ("codeflux version", "codeflux --help")
        verdict = f"target <= {TARGET:.2f}x   {'met' if ratio <= TARGET else 'NOT met'}" if held else "(reported)"
        print(f"  {name + ' / python3 -c pass':<48} {ratio:5.2f}x   (cpu {cpu_ratio:5.2f}x)   {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
