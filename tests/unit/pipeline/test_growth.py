"""Stage 16's growth planning and fit (issue 17): which atoms have a sized input, how each parameter is filled, why
the others are skipped, the log-log fit, and the timing report read as untrusted data. The timing itself runs in
a real worker: tests/integration/test_atom_growth.py."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from codeflux.domain.atoms import atoms_between
from codeflux.pipeline.growth import NO_SIZED_INPUT, GrowthPlan, _measured, _within_one_run, fit_exponent, growth_plan
from codeflux.pipeline.growth_script import GROWTH_MARKER, GROWTH_SCRIPT

SOURCE = '''from typing import Optional, Sequence


def words(text: str, limit: int, sep: str = " ") -> list[str]:
    return text.split(sep)[:limit]


def table(rows: "dict[str, float]", *, scale: float | None) -> int:
    return len(rows)


def ones(n: int) -> list[int]:
    return [1] * n


def legacy(items=[], flag=True):
    return items


def many(xs: Sequence[str], ys: Optional[bytes]) -> int:
    return len(xs)


def add(a: int, b: int) -> int:
    return a + b


def opaque(items: list[int], thing) -> int:
    return 0


async def fetch(data: bytes) -> bytes:
    return data


class Shelf:
    def weigh(self, items: tuple[int, ...]) -> int:
        return len(items)

    @staticmethod
    def count_of(blob: bytes) -> int:
        return len(blob)

    @property
    def title(self) -> str:
        return ""
'''


def plans() -> dict[str, GrowthPlan | str]:
    found = atoms_between("pkg/mod.py", None, SOURCE, module="pkg.mod")
    return {atom.local_name: growth_plan(atom, SOURCE) for atom in found.atoms}


def test_sized_parameters_grow_and_the_others_get_defaults_or_simple_values() -> None:
    planned = plans()

    words = planned["words"]
    assert isinstance(words, GrowthPlan) and words.sized == ("text",)
    assert words.params == ({"name": "text", "pass": "positional", "value": {"gen": "str"}},
                            {"name": "limit", "pass": "positional", "value": {"literal": 3}})  # sep: its default
    table = planned["table"]
    assert isinstance(table, GrowthPlan) and table.params == (
        {"name": "rows", "pass": "positional", "value": {"gen": "dict", "item": "str", "value": "float"}},
        {"name": "scale", "pass": "keyword", "value": {"literal": None}})
    ones = planned["ones"]
    assert isinstance(ones, GrowthPlan) and ones.params[0]["value"] == {"size": True}
    legacy = planned["legacy"]
    assert isinstance(legacy, GrowthPlan) and legacy.sized == ("items",)  # evidently a list: its default
    many = planned["many"]
    assert isinstance(many, GrowthPlan) and many.params[1]["value"] == {"literal": None}
    weigh = planned["Shelf.weigh"]
    assert isinstance(weigh, GrowthPlan) and (weigh.call, weigh.module) == ("instance", "pkg.mod")
    assert weigh.params == ({"name": "items", "pass": "positional", "value": {"gen": "tuple", "item": "int"}},)
    static = planned["Shelf.count_of"]
    assert isinstance(static, GrowthPlan) and static.call == "static"


def test_atoms_that_cannot_be_timed_say_why() -> None:
    planned = plans()

    assert planned["add"] == NO_SIZED_INPUT
    assert planned["opaque"] == "skipped: parameter thing has no annotation or default to build a value from"
    assert planned["fetch"] == "skipped: an async function (calling it does not run it)"
    assert planned["Shelf.title"] == "skipped: a property (not called with arguments)"


def test_the_exponent_is_the_log_log_least_squares_slope() -> None:
    sizes = [100, 400, 1600]
    assert fit_exponent(sizes, [size * 2e-7 for size in sizes]) == pytest.approx(1.0)
    assert fit_exponent(sizes, [size**2 * 1e-9 for size in sizes]) == pytest.approx(2.0)
    assert fit_exponent(sizes, [3e-6, 3e-6, 3e-6]) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        fit_exponent(sizes, [1.0, 0.0, 2.0])


def test_the_timing_report_is_untrusted_and_validated() -> None:
    sizes = [100, 400, 1600]
    good = _measured({"sizes": sizes, "seconds": [1e-5, 4e-5, 1.6e-4], "calls": [3, 3, 3]}, sizes)
    assert good["measured"] is True and good["exponent"] == "1.00" and good["seconds"] == ["1e-05", "4e-05", "0.00016"]
    for bad in ({"sizes": sizes, "seconds": [1e-5, math.inf, 1.0]}, {"sizes": [1, 2, 3], "seconds": [1.0, 2.0, 3.0]},
                {"sizes": sizes, "seconds": ["1", "2", "3"]}, "text", None):
        assert _measured(bad, sizes)["measured"] is False
    assert _measured({"problem": "not measured: raised KeyError at size 400"}, sizes) == {
        "measured": False, "detail": "not measured: raised KeyError at size 400"}


def test_the_fixed_script_stops_an_atom_past_its_budget(tmp_path: Path) -> None:
    """The per-atom budget is enforced inside the script (here run plainly: it is codeflux's own program; the
    pipeline runs it only in the task's box)."""
    (tmp_path / "slow.py").write_text("import time\n\ndef crawl(items: list[int]) -> int:\n"
                                      "    while len(items) > 10:\n        time.sleep(0.01)\n    return 0\n")
    job = {"sizes": [10, 40, 160], "repetitions": 1, "min_measure_s": 0.001, "budget_s": 0.3,
           "atoms": [{"key": "slow.crawl", "module": "slow", "local": "crawl", "call": "function",
                      "params": [{"name": "items", "pass": "positional", "value": {"gen": "list", "item": "int"}}]}]}

    done = subprocess.run([sys.executable, "-c", GROWTH_SCRIPT, json.dumps(job)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30, check=True)

    report = json.loads(done.stdout.strip().splitlines()[-1].removeprefix(GROWTH_MARKER))["slow.crawl"]
    assert report["problem"] == "not measured: the time budget (0.3 s) ran out at size 40"
    shown = _measured(report, [10, 40, 160])
    assert shown["detail"] == report["problem"] and shown["measured"] is False
    assert shown["measured_before_the_budget_ran_out"]["sizes"] == [10]  # type: ignore[index]


def test_one_timing_run_holds_only_the_atoms_whose_budgets_fit_the_commands_limit() -> None:
    plan = plans()["ones"]
    assert isinstance(plan, GrowthPlan)
    many = {f"pkg.mod.f{index}": plan for index in range(6)}
    growth: dict[str, dict[str, object]] = {name: {"measured": False} for name in many}

    jobs = _within_one_run(many, growth, 120.0)  # 4 × 120 s fit in 540 s

    assert [job["key"] for job in jobs] == ["pkg.mod.f0", "pkg.mod.f1", "pkg.mod.f2", "pkg.mod.f3"]
    assert list(many) == ["pkg.mod.f0", "pkg.mod.f1", "pkg.mod.f2", "pkg.mod.f3"]
    assert str(growth["pkg.mod.f5"]["detail"]).startswith("not measured: one timing run holds no more atoms")
