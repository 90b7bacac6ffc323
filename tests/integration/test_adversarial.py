"""Stage 31 adversarial (issue 18, sends back): the change's commands — the person's command examples, the console
entry points and package ``__main__`` it touches — run confined in a scratch copy on seven hostile inputs with a
canary secret in their environment. Real task worktrees, a real worker, real bubblewrap. The reproduction of the
issue's "Why": the stage was ``not-implemented`` — a CLI that prints a traceback on invalid UTF-8, hangs on an
empty stdin or echoes its environment reached review green.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.coordinator.runs.pipeline_ports import submit_check_command
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.acceptance import AcceptanceExample
from codeflux.domain.pipeline import StageName, StageOutcome, stage_named
from codeflux.gitwork.diff import diff_against_base
from codeflux.pipeline.adversarial import CANARY_NAME, evaluate_adversarial
from codeflux.pipeline.adversarial_script import CASES
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.specification import StageResult
from codeflux.pipeline.thresholds import ADVERSARIAL_TIMEOUT_S, StoredSettings, set_threshold
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import SOURCE, allow, allow_overlay_install, assembled_facts, running_ports
from tests.fixtures.task_runs import Harness, a_plan_with_two_steps, make_harness

PYPROJECT = '[project]\nname = "pkg"\nversion = "0"\n\n[project.scripts]\ncount-lines = "pkg.cli:main"\n'
BAD_CLI = (
    "import os\nimport sys\nimport time\n\n\n"
    "def main():\n"
    "    with open('out.log', 'w') as handle:\n"  # a command that writes where it runs: the scratch copy
    "        handle.write('ran')\n"
    "    data = sys.stdin.buffer.read() if len(sys.argv) < 2 else open(sys.argv[1], 'rb').read()\n"
    "    if not data:\n"
    "        time.sleep(60)\n"  # waits for input that never comes
    "    if b'\\x00' in data:\n"
    "        print(dict(os.environ))\n"  # dumps its environment, secrets included
    "        return 0\n"
    "    print(len(data.decode('utf-8').splitlines()))\n"  # a traceback on invalid UTF-8
    "    return 0\n"
)
GOOD_CLI = (
    "import sys\n\n\n"
    "def main():\n"
    "    if len(sys.argv) > 1:\n"
    "        try:\n"
    "            with open(sys.argv[1], 'rb') as handle:\n"
    "                data = handle.read()\n"
    "        except OSError as error:\n"
    "            print(f'count-lines: {error.strerror}: {sys.argv[1]}', file=sys.stderr)\n"
    "            return 1\n"
    "    else:\n"
    "        try:\n"
    "            data = sys.stdin.buffer.read()\n"
    "        except (OSError, ValueError, AttributeError):\n"
    "            data = b''\n"
    "    try:\n"
    "        text = data.decode('utf-8')\n"
    "    except UnicodeDecodeError:\n"
    "        print('count-lines: the input is not UTF-8', file=sys.stderr)\n"
    "        return 2\n"
    "    print(len(text.splitlines()))\n"
    "    return 0\n"
)
MAIN = "import sys\n\nfrom pkg.cli import main\n\nsys.exit(main())\n"


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def ports_with(harness: Harness, db: Database, *, examples: tuple[AcceptanceExample, ...] = (),
               timeout_s: int = 2) -> PipelinePorts:
    plan = a_plan_with_two_steps()
    ports = running_ports(harness, plan=dataclasses.replace(plan, examples=plan.examples + examples))
    set_threshold(db, ADVERSARIAL_TIMEOUT_S, timeout_s, expected_revision=None)
    return dataclasses.replace(ports, settings=StoredSettings(db))


def write(ports: PipelinePorts, files: dict[str, str]) -> list[str]:
    for relative, text in files.items():
        target = ports.facts.worktree.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return sorted(files)


def target_of(result: StageResult, key_start: str) -> dict[str, object]:
    targets = result.evidence["targets"]
    assert isinstance(targets, list)
    return next(item for item in targets if str(item["key"]).startswith(key_start))


def test_a_cli_that_hangs_tracebacks_and_prints_its_environment_fails_each_finding_named(
        harness: Harness, db: Database) -> None:
    example = AcceptanceExample(argv=(harness.venv_python, "-m", "pkg", "data.txt"), expected=("2",))
    ports = ports_with(harness, db, examples=(example,))
    changed = write(ports, {"pyproject.toml": PYPROJECT, "pkg/cli.py": BAD_CLI, "pkg/__main__.py": MAIN,
                            "data.txt": "one\ntwo\n"})
    allow(harness.driver, ports.facts.task_id, example.argv)
    identity = diff_against_base(ports.facts.worktree).identity

    result = evaluate_adversarial(ports, attempt=1, changed=changed, seed=7)

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    findings = result.evidence["findings"]
    assert isinstance(findings, list)
    entry = "entry point count-lines (pkg.cli:main)"
    assert f"{entry} on empty: hangs (still running at the time limit; its process group was killed)" in findings
    assert any(item.startswith(f"{entry} on invalid-utf8: an uncaught traceback (UnicodeDecodeError")
               for item in findings), findings
    assert f"{entry} on nul: prints the secret from its environment ({CANARY_NAME})" in findings
    # the example reads data.txt: with that file missing it must not exit 0 — this one raises instead
    example_key = f"example 2: {harness.venv_python} -m pkg data.txt"
    assert any(item.startswith(f"{example_key} on missing-file: an uncaught traceback (FileNotFoundError")
               for item in findings), findings
    assert target_of(result, "example 2")["file_argument"] == 3
    main = target_of(result, "python -m pkg")
    assert [case["case"] for case in main["cases"]] == list(CASES)  # type: ignore[index]
    # every command ran in a scratch copy: out.log never reached the worktree, whose diff is unchanged
    assert not (ports.facts.worktree.path / "out.log").exists()
    assert diff_against_base(ports.facts.worktree).identity == identity
    temp = harness.driver.task_temp_directory(ports.facts.task_id)
    assert not (temp / "codeflux-scratch" / "adversarial").exists() and not list(temp.glob("codeflux-checks/*"))
    runs = result.evidence["runs"]
    assert isinstance(runs, list) and len(runs) == 2  # one following the example's decision, one the test command's
    timeout = result.evidence["timeout"]
    assert result.evidence["seed"] == 7 and isinstance(timeout, dict)
    assert (timeout["key"], timeout["value"], timeout["default"]) == ("pipeline.adversarial.timeout-s", 2, 10)
    # the send-back's fingerprint: which command failed on which input (never the seed or the canary)
    assert f"{entry} on empty" in result.evidence["failing"]  # type: ignore[operator]
    assert "cf-canary-" not in str(result.evidence)  # the made-up secret itself is never recorded
    said = result.verdict.gate_evaluation or ""
    assert said.startswith("commands: 3 command(s) × 7 hostile input(s) (seed 7, 2 s each)")


def test_a_cli_that_refuses_bad_input_cleanly_satisfies_it(harness: Harness, db: Database) -> None:
    example = AcceptanceExample(argv=(harness.venv_python, "-m", "pkg", "data.txt"), expected=("2",))
    ports = ports_with(harness, db, examples=(example,))
    changed = write(ports, {"pyproject.toml": PYPROJECT, "pkg/cli.py": GOOD_CLI, "pkg/__main__.py": MAIN,
                            "data.txt": "one\ntwo\n"})
    allow(harness.driver, ports.facts.task_id, example.argv)

    result = evaluate_adversarial(ports, attempt=1, changed=changed)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    assert result.evidence["findings"] == []
    missing = next(case for case in target_of(result, "example 2")["cases"]  # type: ignore[attr-defined]
                   if case["case"] == "missing-file")
    assert missing["exit"] == 1 and "No such file or directory" in " ".join(missing["stderr_tail"])
    huge = next(case for case in target_of(result, "entry point")["cases"]  # type: ignore[attr-defined]
                if case["case"] == "huge-line")
    assert huge["exit"] == 0 and huge["hung"] is False


def test_a_change_that_touches_no_command_is_skipped(harness: Harness, db: Database) -> None:
    ports = ports_with(harness, db)
    changed = write(ports, {"pkg/calc.py": "def add(a, b):\n    return a + b\n"})
    skipped = evaluate_adversarial(ports, attempt=1, changed=changed)
    assert skipped.verdict.outcome is StageOutcome.SKIPPED
    assert "no command acceptance example" in (skipped.verdict.reason or "")


def test_a_denied_example_is_not_run_through_a_side_door(harness: Harness, db: Database) -> None:
    example = AcceptanceExample(argv=(harness.venv_python, "-m", "pkg", "data.txt"), expected=("2",))
    ports = ports_with(harness, db, examples=(example,))
    changed = write(ports, {"pkg/__main__.py": "print(1)\n", "data.txt": "x\n"})
    request = submit_check_command(harness.driver, ports.facts.task_id, example.argv, attempt=1)
    assert request.outcome is DecisionOutcome.PENDING
    harness.driver.decide(request.request_id, UserDecision.DENY, reason="not this command")

    result = evaluate_adversarial(ports, attempt=1, changed=changed)

    # a denial blocks the capability (running programs in this task): neither the denied example nor the
    # package's __main__ (which follows the test command's decision) is given hostile input through a side door;
    # a blocked stage carries no evidence, its reason names each command and why it did not run
    assert result.verdict.outcome is StageOutcome.BLOCKED, result.verdict
    assert result.evidence == {}
    reason = result.verdict.reason or ""
    assert "no command was given hostile input" in reason
    assert "example 2: " in reason and "was not allowed" in reason
    assert "python -m pkg: not run: refused-denied-capability" in reason
    assert "covered by the denial of process" in reason


SETTING = (
    "def setting_value(line: str) -> str:\n"
    "    \"\"\"The value of a `key = value` line.\n\n    Raises:\n        ValueError: when the line is empty.\n"
    "    \"\"\"\n"
    "    if not line:\n        raise ValueError('empty')\n"
    "    return line.split('=', 1)[1].strip()\n"
)
SAFE_SETTING = SETTING.replace("    return line.split('=', 1)[1].strip()\n",
                               "    _, sign, value = line.partition('=')\n"
                               "    if not sign:\n        raise ValueError('no =')\n"
                               "    return value.strip()\n")


def test_a_public_atom_taking_text_gets_hostile_input_and_an_undocumented_crash_fails(
        harness: Harness, db: Database) -> None:
    ports = ports_with(harness, db)
    allow_overlay_install(harness, ports.facts.task_id)
    changed = write(ports, {"pkg/text.py": SETTING})
    facts = assembled_facts(ports)

    result = evaluate_adversarial(ports, attempt=1, changed=changed, atoms=facts, seed=11)

    assert result.verdict.outcome is StageOutcome.FAILED, result.verdict
    hostile = result.evidence["hostile_atoms"]
    assert isinstance(hostile, dict) and hostile["outcome"] == "failed"
    assert result.evidence["failing"] == ["pkg.text.setting_value on hostile input"]
    findings = result.evidence["findings"]
    assert isinstance(findings, list) and len(findings) == 1
    assert findings[0].startswith("pkg.text.setting_value raised builtins.IndexError")
    assert "documented raises: ValueError" in findings[0]
    said = result.verdict.gate_evaluation or ""
    assert said.startswith("commands: no command acceptance example") and "; atoms: 1 atom(s) fuzzed" in said


def test_a_public_atom_that_refuses_bad_text_as_documented_satisfies_it(harness: Harness, db: Database) -> None:
    ports = ports_with(harness, db)
    allow_overlay_install(harness, ports.facts.task_id)
    changed = write(ports, {"pkg/text.py": SAFE_SETTING})

    result = evaluate_adversarial(ports, attempt=1, changed=changed, atoms=assembled_facts(ports), seed=11)

    assert result.verdict.outcome is StageOutcome.SATISFIED, result.verdict
    hostile = result.evidence["hostile_atoms"]
    assert isinstance(hostile, dict) and hostile["outcome"] == "satisfied"
    atoms = hostile["atoms"]
    assert isinstance(atoms, list) and atoms[0]["because"] == "public, takes line (text or bytes)"


def test_the_catalog_says_stage_31_is_performed_sends_back_and_what_it_does_not_prove() -> None:
    stage = stage_named(StageName.ADVERSARIAL)
    assert stage.performable and stage.sends_back
    assert "missing file" in stage.gate and "Not proven" in stage.gate
