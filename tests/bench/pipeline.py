"""Benchmark: phase B's wall time and the whole 37-stage pipeline's against the package's own suite, and stage 13's
mutant runner against ``mutmut run`` restricted to the same function, in the same run.

Run with `cmd/codeflux-dev bench pipeline`.

* **phase B** — stages 5 and 7–17 as :func:`codeflux.pipeline.phase_b.record_atom_stages` runs them, for real (a
  started task, its worktree, the real worker, every command confined, coverage.py from the overlay installed
  from ``.artifacts/wheelhouse``) on the demo's change and on a one-function change in toolz 1.2.0 (its sdist is
  vendored in ``tests/data``), against that package's whole pytest suite run with the same interpreter in the same
  run; per stage, and the confined commands each stage ran (with the boxed program's own time), plus stage 8's
  coverage run repeated unconfined (what the box adds to the largest command). Fuzz (stage 12) and growth
  (stage 16's timing run) are taken off and reported apart. The harness is ``tests/bench/_phase_b.py`` (its
  docstring says how); ``CODEFLUX_BENCH_PHASE_B_SAMPLES`` (default 3) sets the warm runs per case.

* **the whole pipeline** — :func:`codeflux.pipeline.runner.run_pipeline` on the same two cases, all 37 stages with
  the default settings (repetition and the platform matrix included), against the suite in the same run; each
  stage's share (``tests/bench/_whole_pipeline.py``; ``CODEFLUX_BENCH_WHOLE_SAMPLES``, default 2, warm runs per case).

* **mutation** — one small project (``pkg/calc.py`` with ``scale``, a tests file whose ``test_scale`` covers it).
  codeflux's side: the mutants of ``scale``'s body made by :func:`~codeflux.pipeline.mutants.mutants_of_atom` (every
  body line counted as changed), each with ``test_scale`` as its covering test, judged by the exact in-box runner
  :data:`~codeflux.pipeline.mutation.MUTATION_SCRIPT` (one process: baseline run, then every mutant switched in
  process) — run here directly, not through a worker: the confinement's one command per stage run is left out,
  as mutmut runs unconfined too. mutmut's side: ``mutmut run "pkg.calc.x_scale__mutmut_*"`` in a fresh copy
  (mutmut from ``.artifacts/bench-tools``, which ``cmd/codeflux-dev setup`` fills; its generation, stats and
  forced-fail runs included, as codeflux's generation and baseline are). Both sides use that environment's
  interpreter and pytest. The raw baseline is one ``python -m pytest -q tests/test_calc.py::test_scale``.

Prints per side the median wall time of SAMPLES runs, mutants judged, and mutants judged per second (wall-clock,
start-up included), and codeflux's rate over its mutant loop only. Nothing is asserted on time: the figures go
to docs/benchmarks.md under ``## bench pipeline``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from _phase_b import REPO_ENV, WHEELHOUSE, bench_phase_b
from _whole_pipeline import bench_whole

from codeflux.pipeline.mutants import mutants_of_atom
from codeflux.pipeline.mutation import MIN_TIMEOUT_SECONDS, MUTATION_SCRIPT

REPO: Final = Path(__file__).resolve().parents[2]
BENCH_TOOLS: Final = REPO / ".artifacts" / "bench-tools"
SAMPLES: Final = 5
PHASE_B_SAMPLES: Final = int(os.environ.get("CODEFLUX_BENCH_PHASE_B_SAMPLES", "3"))
WHOLE_SAMPLES: Final = int(os.environ.get("CODEFLUX_BENCH_WHOLE_SAMPLES", "2"))

CALC: Final = (
    "def add(a, b):\n    return a + b\n\n\n"
    "def scale(a, b, offset=1):\n"
    "    total = a * b\n"
    "    if total > 10 and a != b:\n"
    "        total -= 1\n"
    "    if offset < 0 or total == 0:\n"
    "        return 0\n"
    "    return total + offset\n"
)
TESTS: Final = (
    "from pkg.calc import add, scale\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_scale():\n    assert scale(2, 3) == 7\n    assert scale(3, 5) == 15\n    assert scale(4, 4) == 17\n"
    "    assert scale(0, 4) == 0\n    assert scale(2, 2, -1) == 0\n"
)
PYPROJECT: Final = '[tool.mutmut]\nsource_paths = ["pkg/"]\npytest_add_cli_args_test_selection = ["tests/"]\n'


def project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / "pyproject.toml").write_text(PYPROJECT)
    return root


def environment(temp: Path) -> dict[str, str]:
    return {**{key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")},
            "TMPDIR": str(temp), "PYTHONDONTWRITEBYTECODE": "1"}


def codeflux_once(python: Path, work: Path) -> tuple[float, int, float]:
    root = project(work / "project")
    temp = work / "tmp"
    (temp / "codeflux-checks").mkdir(parents=True)
    body = list(range(6, 12))
    found = mutants_of_atom(CALC, local_name="scale", first_line=5, lines=body, limit=100)
    assert found
    test = "tests/test_calc.py::test_scale"
    job = {"mutants": [{"id": f"0.{n}", "path": "pkg/calc.py", "source": m.source, "tests": [test]}
                       for n, m in enumerate(found)], "tests": [test], "min_timeout": MIN_TIMEOUT_SECONDS}
    (temp / "codeflux-checks" / "mutation-job.json").write_text(json.dumps(job))
    started = time.perf_counter()
    subprocess.run([str(python), "-c", MUTATION_SCRIPT, "-"], cwd=root, env=environment(temp), check=True,
                   capture_output=True)
    wall = time.perf_counter() - started
    report = json.loads((temp / "codeflux-checks" / "mutation-report.json").read_text())
    judged = sum(1 for item in report["mutants"] if item["failed"] or item["hung"] or item["status"] == 0)
    return wall, judged, float(report["mutants_seconds"])


def mutmut_once(work: Path) -> tuple[float, int]:
    root = project(work / "project")
    temp = work / "tmp"
    temp.mkdir()
    mutmut = BENCH_TOOLS / "bin" / "mutmut"
    started = time.perf_counter()
    subprocess.run([str(mutmut), "run", "pkg.calc.x_scale__mutmut_*"], cwd=root, env=environment(temp), check=True,
                   capture_output=True)
    wall = time.perf_counter() - started
    shown = subprocess.run([str(mutmut), "results", "--all", "true"], cwd=root, env=environment(temp), check=True,
                           capture_output=True, text=True).stdout
    judged = len(re.findall(r"x_scale__mutmut_\d+: (killed|survived|timeout)", shown))
    return wall, judged


def pytest_once(python: Path, work: Path) -> float:
    root = project(work / "project")
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_calc.py::test_scale"],
                   cwd=root, env=environment(work), check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> int:
    python = BENCH_TOOLS / "bin" / "python"
    if not (BENCH_TOOLS / "bin" / "mutmut").exists():
        print(f"bench pipeline: mutmut is not in {BENCH_TOOLS} — run cmd/codeflux-dev setup", file=sys.stderr)
        return 1
    if not any(WHEELHOUSE.glob("coverage-*.whl")):
        print(f"bench pipeline: no coverage wheel in {WHEELHOUSE} — run cmd/codeflux-dev setup", file=sys.stderr)
        return 1
    if not (REPO_ENV / "bin" / "pytest").exists():
        print(f"bench pipeline: pytest is not in {REPO_ENV} — run cmd/codeflux-dev bench pipeline", file=sys.stderr)
        return 1
    bench_phase_b(PHASE_B_SAMPLES, print)
    bench_whole(WHOLE_SAMPLES, print)
    ours: list[tuple[float, int, float]] = []
    theirs: list[tuple[float, int]] = []
    raw: list[float] = []
    for _ in range(SAMPLES):  # interleaved, a fresh copy each time
        for side in ("codeflux", "mutmut", "pytest"):
            work = Path(tempfile.mkdtemp(prefix=f"bench-{side}-"))
            try:
                if side == "codeflux":
                    ours.append(codeflux_once(python, work))
                elif side == "mutmut":
                    theirs.append(mutmut_once(work))
                else:
                    raw.append(pytest_once(python, work))
            finally:
                shutil.rmtree(work, ignore_errors=True)
    our_wall = statistics.median(item[0] for item in ours)
    our_loop = statistics.median(item[2] for item in ours)
    their_wall = statistics.median(item[0] for item in theirs)
    our_judged, their_judged = ours[0][1], theirs[0][1]
    version = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('mutmut'), "
                              "m.version('pytest'))"], capture_output=True, text=True, check=True).stdout.split()
    print(f"bench pipeline (mutation; {SAMPLES} samples, medians; mutmut {version[0]}, pytest {version[1]})")
    print(f"  codeflux runner : {our_judged} mutants judged in {our_wall:.2f} s wall = "
          f"{our_judged / our_wall:.1f} mutants/s (mutant loop alone {our_loop:.2f} s = "
          f"{our_judged / our_loop:.1f} mutants/s)")
    print(f"  mutmut run      : {their_judged} mutants judged in {their_wall:.2f} s wall = "
          f"{their_judged / their_wall:.1f} mutants/s")
    print(f"  one pytest run  : {statistics.median(raw):.2f} s wall (raw baseline)")
    print(f"  rate ratio (codeflux / mutmut, wall): {(our_judged / our_wall) / (their_judged / their_wall):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
