"""The pieces of ``bench pipeline``'s phase-B half (tests/bench/_phase_b.py): the vendored sdist, its licence, the
one-function changes, and the timing wrappers. Nothing here is timed or asserts a time: the figures are the
benchmark's (docs/benchmarks.md)."""

from __future__ import annotations

import ast
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from codeflux.domain.pipeline import StageName, StageOutcome, stage_named
from codeflux.pipeline.mutation import MUTATION_SCRIPT
from codeflux.pipeline.phase_b import ATOM_STAGES, AtomStage
from codeflux.pipeline.specification import stage_result
from codeflux.pipeline.tool_overlay import BOOTSTRAP_SCRIPT
from tests.bench._phase_b import (
    SDIST,
    SDIST_LICENCE,
    TOOLZ_FILE,
    CommandTiming,
    HarnessError,
    PhaseBRun,
    StageTiming,
    TimedCommands,
    _script_names,
    apply_edits,
    command_label,
    demo_case,
    git,
    make_repository,
    suite_copy,
    timed_stages,
    toolz_case,
    unpack_sdist,
)


def test_the_vendored_sdist_is_small_unpacks_inside_its_folder_and_keeps_its_licence(tmp_path: Path) -> None:
    assert SDIST.stat().st_size < 300 * 1024
    with tarfile.open(SDIST) as archive:
        names = archive.getnames()
    assert all(name.startswith("toolz-1.2.0/") or name == "toolz-1.2.0" for name in names)
    top = unpack_sdist(tmp_path)
    licence = (top / SDIST_LICENCE).read_text()
    assert "Copyright (c) 2013 Matthew Rocklin" in licence and "Redistribution and use" in licence
    assert SDIST.with_name("toolz-1.2.0.LICENSE.txt").read_text() == licence  # the copy beside the archive
    assert (top / "toolz" / "tests" / "test_itertoolz.py").is_file()


def _functions(source: str) -> dict[str, str]:
    tree = ast.parse(source)
    return {node.name: ast.dump(node) for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_the_toolz_change_rewrites_exactly_one_function_and_its_own_tests_still_pass(tmp_path: Path) -> None:
    case = toolz_case()
    before = (unpack_sdist(tmp_path / "before") / TOOLZ_FILE).read_text()
    root = suite_copy(case, tmp_path / "after")
    after = (root / TOOLZ_FILE).read_text()
    old, new = _functions(before), _functions(after)
    assert old.keys() == new.keys()
    assert [name for name in old if old[name] != new[name]] == ["frequencies"]
    assert (root / ".gitignore").read_text() == ".venv\n" and (root / SDIST_LICENCE).is_file()
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "toolz/tests/test_itertoolz.py"]
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False,
                          env={"PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(tmp_path), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]


def test_the_demo_change_is_the_scripted_demos_edit_and_applies_to_the_sample(tmp_path: Path) -> None:
    case = demo_case()
    assert [edit.path for edit in case.edits] == ["calc/ops.py"]
    root = suite_copy(case, tmp_path / "demo")
    assert "    return a + b\n" in (root / "calc" / "ops.py").read_text()
    assert [step.title for step in case.plan.steps] == ["Fix add()"]
    with pytest.raises(HarnessError, match="occurs 0 times"):
        apply_edits(root, case.edits)  # already applied: the old text is gone


def test_a_case_repository_is_committed_clean_with_its_venv_linked_and_ignored(tmp_path: Path) -> None:
    environment = tmp_path / "env"
    environment.mkdir()
    repo = make_repository(toolz_case(), tmp_path / "repo", python_env=environment)
    assert (repo / ".venv").resolve() == environment.resolve()
    assert git(repo, "status", "--porcelain", "--ignored").splitlines() == ["!! .venv"]


def test_commands_are_named_by_the_fixed_script_they_run() -> None:
    scripts = _script_names()
    assert command_label(("/v/bin/python", "-c", MUTATION_SCRIPT, "-"), scripts) == "MUTATION_SCRIPT"
    assert command_label(("/v/bin/python", "-c", BOOTSTRAP_SCRIPT, "/site", "-m", "coverage", "run"),
                         scripts) == "BOOTSTRAP_SCRIPT -m coverage"
    assert command_label(("/v/bin/python", "-m", "pytest", "-q"), scripts) == "-m pytest"


def test_timed_stages_keep_the_order_and_results_and_say_which_stage_runs(tmp_path: Path) -> None:
    commands = TimedCommands(inner=None, scripts={})  # type: ignore[arg-type]  # no command runs here
    running: list[StageName | None] = []

    def evaluate_as(stage: StageName) -> AtomStage:
        def evaluate(_: object) -> object:
            running.append(commands.stage)
            return stage_result(stage, StageOutcome.SKIPPED, "nothing to look at", {})
        return AtomStage(stage=stage, evaluate=evaluate)  # type: ignore[arg-type]

    stages, seen = timed_stages(commands, tuple(evaluate_as(stage.stage) for stage in ATOM_STAGES))
    results = [stage.evaluate(None) for stage in stages]  # type: ignore[arg-type]

    assert [stage.stage for stage in stages] == [stage.stage for stage in ATOM_STAGES] == running
    assert [name for name, _, _ in seen] == running and [result for _, _, result in seen] == results
    assert all(seconds >= 0 for _, seconds, _ in seen) and commands.stage is None


def test_fuzz_and_growth_are_taken_off_the_counted_time_and_reported_apart() -> None:
    def stage(name: StageName, seconds: float) -> StageTiming:
        return StageTiming(stage=name, number=stage_named(name).number, seconds=seconds, outcome="satisfied", said="")

    def command(name: StageName, seconds: float, *, growth: bool = False) -> CommandTiming:
        return CommandTiming(stage=name, label="x", seconds=seconds, program=seconds / 2, state="succeeded",
                             growth=growth)

    run = PhaseBRun(case="c", wall=10.0,
                    stages=(stage(StageName.ATOM_EXAMPLE_TESTS, 3.0), stage(StageName.ATOM_FUZZ, 2.5),
                            stage(StageName.ATOM_COMPLEXITY, 1.5)),
                    commands=(command(StageName.ATOM_EXAMPLE_TESTS, 2.0),
                              command(StageName.ATOM_COMPLEXITY, 1.25, growth=True)))

    assert (run.fuzz, run.growth, run.counted) == (2.5, 1.25, 6.25)
    assert run.stage_seconds(StageName.ATOM_FUZZ) == 2.5 and run.stage_seconds(StageName.ATOMS) == 0
