"""Phase E: 27 program — an installable build (a wheel) made from the attempt's final tree, without network.

A repository with build configuration (``pyproject.toml`` with a ``[build-system]`` table, ``setup.py`` or
``setup.cfg`` at its top) is built by the repository's interpreter (the test command's):
``<python> -m pip wheel --no-deps --no-build-isolation --no-index -w .codeflux-wheel .`` — no dependency is
fetched, no isolated build environment is made, no index is asked: the build uses what the environment has.
It runs in a scratch copy of the final tree under the task's TMPDIR (:data:`BUILD_DIRECTORY`, started in as
``$TMPDIR/codeflux-scratch/build``: the base tree with every file of the diff laid over it), so the build's own
droppings (``build/``, ``*.egg-info``) never reach the worktree or its diff, and the copy is removed
afterwards. Its authority follows the decision on the test
command this attempt (the same interpreter in the same box, running the repository's own build
configuration, which the test command can run anyway); it is not made when that was not allowed.

Outcomes: no build configuration → ``skipped`` with the reason; no ``pip``, or the build backend missing
from the environment (``--no-build-isolation`` needs it installed) → ``blocked`` naming it and how to get it;
the test command not allowed → ``blocked``. Otherwise the stage is **advisory** (ARCHITECTURE §8.2): it
records ``satisfied`` with its findings — the wheel's name and sha256, or that the build failed with the last
lines of its output — and never decides the run's exit code or stops the tests.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path
from typing import Final

from codeflux.domain.operations import TASK_TEMP_DIRECTORY
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.pipeline.base_revision import SCRATCH_FOLDER
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import detect_test_command
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["BUILD_DIRECTORY", "BUILD_WORKING_DIRECTORY", "build_configuration", "declared_backend", "evaluate_program",
           "wheel_argv"]

BUILD_DIRECTORY: Final = f"{SCRATCH_FOLDER}/build"
"""The build copy, relative to the task's TMPDIR."""
BUILD_WORKING_DIRECTORY: Final = f"{TASK_TEMP_DIRECTORY}/{BUILD_DIRECTORY}"
_WHEEL_DIRECTORY: Final = ".codeflux-wheel"
_TAIL_LINES: Final = 12
_NO_PIP: Final = re.compile(r"No module named '?pip'?")
_BACKEND_MISSING: Final = re.compile(r"BackendUnavailable|No module named '?(?P<module>[\w.]+)'?")


def build_configuration(root: Path) -> str | None:
    """Which build configuration the tree at ``root`` has: ``pyproject.toml``, ``setup.py``, ``setup.cfg`` — or
    None. A ``pyproject.toml`` counts only with a ``[build-system]`` table (a tool-config-only file builds
    nothing)."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and not pyproject.is_symlink():
        try:
            if "build-system" in tomllib.loads(pyproject.read_text(encoding="utf-8")):
                return "pyproject.toml"
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
            pass
    for name in ("setup.py", "setup.cfg"):
        if (root / name).is_file() and not (root / name).is_symlink():
            return name
    return None


def declared_backend(root: Path, configuration: str) -> str:
    """The build backend the configuration names (``build-system.build-backend``); setuptools' legacy backend
    for ``setup.py``/``setup.cfg`` or a pyproject that names none (pip's own default)."""
    if configuration == "pyproject.toml":
        try:
            table = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("build-system", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
            table = {}
        backend = table.get("build-backend") if isinstance(table, dict) else None
        if isinstance(backend, str) and backend.strip():
            return backend.strip()
    return "setuptools.build_meta:__legacy__"


def wheel_argv(interpreter: str) -> tuple[str, ...]:
    return (interpreter, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
            "-w", _WHEEL_DIRECTORY, ".")


def _tail(text: str) -> list[str]:
    return [line[:300] for line in text.strip().splitlines()[-_TAIL_LINES:]]


def evaluate_program(ports: PipelinePorts, *, attempt: int, changed: list[str]) -> StageResult:
    """Stage 27 (see the module docstring); ``changed`` are the diff's paths (laid over the base tree)."""
    stage = StageName.PROGRAM
    worktree = ports.facts.worktree
    configuration = build_configuration(worktree.path)
    if configuration is None:
        return stage_result(stage, StageOutcome.SKIPPED, "no build configuration (pyproject.toml with "
                            "[build-system], setup.py or setup.cfg): nothing to build", {})
    command = detect_test_command(worktree=worktree.path, repository_root=ports.repository_root,
                                  search_path=ports.search_path)
    if command is None or command.pytest_missing:
        return stage_result(stage, StageOutcome.BLOCKED, "no usable test command, whose interpreter builds the "
                            "wheel (and whose decision allows the build)", {})
    temp = ports.commands.temp_directory(ports.facts.task_id)
    scratch = write_base_scratch(worktree, root=temp, directory=BUILD_DIRECTORY, overlay=changed)
    if scratch.path is None:
        return stage_result(stage, StageOutcome.BLOCKED, f"the build copy could not be made: {scratch.refusal}", {})
    try:
        argv = wheel_argv(command.interpreter)
        run = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=attempt,
                                               working_directory=BUILD_WORKING_DIRECTORY, covered_by=command.argv)
        if not run.ran:
            return stage_result(stage, StageOutcome.BLOCKED, f"the build did not run: {run.refusal}", {})
        output = f"{run.stdout}\n{run.stderr}"
        if run.exit_code != 0 and _NO_PIP.search(output):
            return stage_result(stage, StageOutcome.BLOCKED, f"pip is not installed for {command.interpreter}; "
                                f"install it with: {command.interpreter} -m ensurepip", {})
        backend = declared_backend(worktree.path, configuration)
        module = backend.split(":")[0].split(".")[0]
        missing = [found for found in _BACKEND_MISSING.finditer(output) if found["module"] is None
                   or found["module"].split(".")[0] == module] if run.exit_code != 0 else []
        if missing:
            return stage_result(stage, StageOutcome.BLOCKED, f"the build backend {backend} ({configuration}) is not "
                                f"installed for {command.interpreter}; a build without network needs it there "
                                f"(e.g. {command.interpreter} -m pip install {module})", {})
        wheels = sorted((scratch.path / _WHEEL_DIRECTORY).glob("*.whl")) if run.exit_code == 0 else []
        evidence: dict[str, object] = {"argv": list(argv), "configuration": configuration,
                                       "interpreter": command.interpreter, "request_id": run.request_id,
                                       "exit_code": run.exit_code, "advisory": True}
        if not wheels:
            evidence["output_tail"] = _tail(output)
            return stage_result(stage, StageOutcome.SATISFIED, f"advisory finding: the wheel did not build from "
                                f"{configuration} (pip wheel exit {run.exit_code}); the last lines are in the "
                                "evidence", evidence)
        built = [{"name": wheel.name, "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
                  "bytes": wheel.stat().st_size} for wheel in wheels if not wheel.is_symlink()]
        evidence["wheels"] = built
        names = ", ".join(f"{item['name']} (sha256 {str(item['sha256'])[:12]})" for item in built)
        return stage_result(stage, StageOutcome.SATISFIED, f"built from {configuration} without network: {names}",
                            evidence)
    finally:
        remove_base_scratch(temp, BUILD_DIRECTORY)
