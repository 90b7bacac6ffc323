"""codeflux's tool overlay (issue 17, "Definitions"): a check tool the repository's environment lacks is installed
once, behind an ``install`` approval, from the wheelhouse ``cmd/codeflux-dev setup`` fills or codeflux's own
installation (never the network),
into ``<data>/tools/<key>/site`` — verified and moved there by the coordinator — and reused afterwards; a check
appends it after site-packages. Real task worktrees, a real worker, real pip and coverage.py, confined.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import venv as venv_module
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeflux.coordinator.runs.headless import NO_TOOLS_INSTALL
from codeflux.coordinator.runs.pipeline_ports import (
    check_request_key,
)
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.ids import TaskId
from codeflux.pipeline.ports import CheckCommandPort, CheckCommandRun
from codeflux.pipeline.program import pytest_argv
from codeflux.pipeline.tool_overlay import (
    COVERAGE,
    HYPOTHESIS,
    INSTALL_TEMP,
    INSTALL_WORKING_DIRECTORY,
    MANIFEST,
    PROBE_SCRIPT,
    ToolSource,
    install_argv,
    overlay_argv,
    probe_argv,
    repository_tools,
    resolve_tools,
)
from codeflux.store import authority as authority_rows
from codeflux.store.database import Database
from tests.fixtures.pipeline_tasks import SOURCE, allow, running_ports, wheelhouse_version
from tests.fixtures.task_runs import Harness, make_harness


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state", tool_source=SOURCE, base_environment={}) as driver:
        yield make_harness(db, tmp_path, driver)


def install_requested(db: Database, task_id: TaskId, python: str, *, attempt: int,
                      source: ToolSource = SOURCE) -> bool:
    key = check_request_key(task_id, attempt, install_argv(python, source), INSTALL_WORKING_DIRECTORY)
    return db.read(lambda view: authority_rows.tool_request_by_key(view, task_id=task_id, idempotency_key=key)) \
        is not None


def test_a_missing_tool_is_installed_once_behind_its_approval_then_reused_and_appended_after_site_packages(
        harness: Harness, tmp_path: Path) -> None:
    version = wheelhouse_version()
    ports = running_ports(harness)
    python, test_argv = harness.venv_python, pytest_argv(harness.venv_python)
    tools = repository_tools(tmp_path / "tools", ports.facts.worktree.repo_root)  # overlays are per repository

    unapproved = resolve_tools(ports, attempt=1, interpreter=python, test_argv=test_argv, tools=(COVERAGE,))

    # the install is its own request: with no decision on it, nothing is installed and the stage would be blocked
    assert not unapproved.ready and "coverage" in (unapproved.blocked or "")
    assert "waits for a decision" in (unapproved.blocked or "")
    assert not (tools / str(unapproved.key)).exists()
    install = install_argv(python, SOURCE)
    assert install[1:4] == ("-m", "pip", "install") and "--no-index" in install
    allow(harness.driver, ports.facts.task_id, install, working_directory=INSTALL_WORKING_DIRECTORY)

    resolved = resolve_tools(ports, attempt=1, interpreter=python, test_argv=test_argv, tools=(COVERAGE,))

    assert resolved.ready, resolved.blocked
    assert resolved.key is not None and resolved.key.startswith("cpython-3.")
    assert [tool.to_evidence() for tool in resolved.tools] == [{
        "tool": "coverage", "version": version, "provided_by": "codeflux overlay",
        "location": str(tools / resolved.key / "site")}]
    # one install holds every check tool (the pre-flight's exact request), Hypothesis and its dependency with it
    assert resolved.install is not None and resolved.install["installed"] == {
        "coverage": version, "hypothesis": wheelhouse_version("hypothesis")}
    assert any((tools / resolved.key / "site").glob("sortedcontainers-*.dist-info"))
    assert "--no-index" in resolved.install["argv"]  # type: ignore[operator]
    assert (tools / resolved.key / MANIFEST).is_file()
    # from a wheelhouse the install is an install, never a network operation: its box had no network
    request = harness.db.read(lambda view: authority_rows.read_tool_request(view, str(resolved.install["request_id"])))
    needs = {need.need.capability.value for need in request.needs}
    assert "install" in needs and "network" not in needs, needs
    assert request.operation.cwd == INSTALL_WORKING_DIRECTORY
    # the box wrote only into the task's TMPDIR; what it wrote was moved away, nothing is left there
    assert not (harness.driver.task_temp_directory(ports.facts.task_id) / INSTALL_TEMP).exists()

    # a check appends the overlay after site-packages and runs the tool from it, in the box
    argv = overlay_argv(python, resolved.overlay_site, "coverage", ["--version"])
    ran = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=1, covered_by=test_argv)
    assert ran.exit_code == 0, ran.stderr
    assert f"Coverage.py, version {version}" in ran.stdout
    listing = overlay_argv(python, resolved.overlay_site, "site", [])
    paths = ports.commands.run_check_command(ports.facts.task_id, listing, attempt=1, covered_by=test_argv).stdout
    listed = [line.strip().strip("',") for line in paths.split("sys.path = [", 1)[1].split("]", 1)[0].splitlines()]
    entries = [entry for entry in listed if entry]
    assert entries[-1] == str(tools / resolved.key / "site")  # appended: after site-packages
    assert any(entry.endswith("site-packages") for entry in entries[:-1])

    # the next attempt (as any task of an interpreter with the same key) reuses it: no install request, nothing asked
    allow(harness.driver, ports.facts.task_id, test_argv, attempt=2)
    reused = resolve_tools(ports, attempt=2, interpreter=python, test_argv=test_argv, tools=(COVERAGE,))
    assert reused.ready and reused.install is None and reused.overlay_site == resolved.overlay_site
    assert install_requested(harness.db, ports.facts.task_id, python, attempt=1)
    assert not install_requested(harness.db, ports.facts.task_id, python, attempt=2)


def test_a_tool_missing_where_no_install_may_be_asked_for_is_blocked_naming_the_tool_and_the_fix(
        db: Database, tmp_path: Path) -> None:
    """A headless run without ``--allow-check-tools`` asks for no install: the tool is missing, nothing is
    installed, and the reason names the flag and the other fixes."""
    declined = ToolSource(declined=NO_TOOLS_INSTALL)
    with ToolDriver(db, state_dir=tmp_path / "state", base_environment={}, tool_source=declined) as driver:
        harness = make_harness(db, tmp_path, driver)
        ports = running_ports(harness)

        resolved = resolve_tools(ports, attempt=1, interpreter=harness.venv_python,
                                 test_argv=pytest_argv(harness.venv_python), tools=(COVERAGE,))

    assert not resolved.ready
    blocked = resolved.blocked or ""
    assert blocked.startswith("coverage is not in the repository's environment")
    assert "only with --allow-check-tools" in blocked
    assert f"{harness.venv_python} -m pip install 'coverage>=7.4,<8'" in blocked
    assert "CODEFLUX_TOOL_WHEELHOUSE" in blocked
    tools = repository_tools(tmp_path / "tools", ports.facts.worktree.repo_root)
    assert sorted(path.name for path in tools.iterdir()) == ["interpreters.json"]  # no overlay
    assert not install_requested(harness.db, ports.facts.task_id, harness.venv_python, attempt=1,
                                 source=ToolSource())


def test_with_no_source_configured_the_overlay_comes_from_codeflux_s_own_installation(
        db: Database, tmp_path: Path) -> None:
    """No wheelhouse, no index: codeflux offers its own coverage.py, rebuilt as a wheel in the install's folder,
    installed by the repository's pip with ``--no-index`` behind the same approval — no network."""
    own = importlib.metadata.version("coverage")
    with ToolDriver(db, state_dir=tmp_path / "state", base_environment={}) as driver:
        assert driver.tool_source.own and not driver.tool_source.needs_network
        harness = make_harness(db, tmp_path, driver)
        ports = running_ports(harness)
        python, test_argv = harness.venv_python, pytest_argv(harness.venv_python)
        install = install_argv(python, ToolSource())
        assert install[-4:] == ("--find-links", "wheels", COVERAGE.requirement, HYPOTHESIS.requirement)
        allow(harness.driver, ports.facts.task_id, install, working_directory=INSTALL_WORKING_DIRECTORY)

        resolved = resolve_tools(ports, attempt=1, interpreter=python, test_argv=test_argv)

    assert resolved.ready, resolved.blocked
    assert resolved.install is not None
    assert resolved.install["installed"] == {"coverage": own, "hypothesis": importlib.metadata.version("hypothesis")}
    assert resolved.install["source"] == "codeflux's own installation"
    request = harness.db.read(lambda view: authority_rows.read_tool_request(view, str(resolved.install["request_id"])))
    needs = {need.need.capability.value for need in request.needs}
    assert "install" in needs and "network" not in needs, needs


def test_the_repository_s_own_tool_wins_over_the_overlay(harness: Harness, tmp_path: Path) -> None:
    """The environment has coverage itself (a folder on its sys.path through a .pth file): the probe finds it
    there, nothing is installed, and the evidence names the repository environment as its provider."""
    venv = tmp_path / "ownvenv"
    venv_module.EnvBuilder(system_site_packages=False, with_pip=False, symlinks=True).create(venv)
    own = venv / "own-site"  # inside the environment: the box shows the installation, not the data dir around it
    own.mkdir()
    (own / "coverage").mkdir()
    (own / "coverage" / "__init__.py").write_text("__version__ = '0.0.1'\n")
    (own / "coverage-0.0.1.dist-info").mkdir()
    (own / "coverage-0.0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: coverage\n"
                                                              "Version: 0.0.1\n")
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "own.pth").write_text(f"{own}\n")
    python = str(venv / "bin" / "python")
    ports = running_ports(harness)
    allow(harness.driver, ports.facts.task_id, pytest_argv(python))

    resolved = resolve_tools(ports, attempt=1, interpreter=python, test_argv=pytest_argv(python), tools=(COVERAGE,))

    assert resolved.ready, resolved.blocked
    assert resolved.overlay_site is None and resolved.install is None
    assert [tool.to_evidence() for tool in resolved.tools] == [{
        "tool": COVERAGE.name, "version": "0.0.1", "provided_by": "repository environment", "location": str(own)}]


class CountingCommands:
    """The real command port, counting the probes it is asked to run (it runs every command for real)."""

    def __init__(self, inner: CheckCommandPort) -> None:
        self.inner = inner
        self.probes = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def run_check_command(self, task_id: TaskId, argv: tuple[str, ...], **options: Any) -> CheckCommandRun:
        self.probes += PROBE_SCRIPT in argv
        return self.inner.run_check_command(task_id, argv, **options)


def test_with_the_attempt_s_cache_the_interpreter_is_probed_once_for_every_check_tool(
        harness: Harness, tmp_path: Path) -> None:
    """Stage 8's coverage map and stage 12's fuzzer resolve their tools with the attempt's shared cache: the
    first probe asks about every check tool, the second stage reads what it reported — one probe per attempt."""
    venv = tmp_path / "ownvenv"
    venv_module.EnvBuilder(system_site_packages=False, with_pip=False, symlinks=True).create(venv)
    own = venv / "own-site"
    for name in ("coverage", "hypothesis"):
        (own / name).mkdir(parents=True)
        (own / name / "__init__.py").write_text("__version__ = '0.0.1'\n")
        (own / f"{name}-0.0.1.dist-info").mkdir()
        (own / f"{name}-0.0.1.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\n"
                                                                  "Version: 0.0.1\n")
    (next((venv / "lib").glob("python3*/site-packages")) / "own.pth").write_text(f"{own}\n")
    python = str(venv / "bin" / "python")
    real = running_ports(harness)
    allow(harness.driver, real.facts.task_id, pytest_argv(python))
    counting = CountingCommands(real.commands)
    ports = dataclasses.replace(real, commands=counting)
    shared: dict[str, object] = {}

    coverage = resolve_tools(ports, attempt=1, interpreter=python, test_argv=pytest_argv(python), tools=(COVERAGE,),
                             probes=shared)
    fuzzer = resolve_tools(ports, attempt=1, interpreter=python, test_argv=pytest_argv(python), tools=(HYPOTHESIS,),
                           probes=shared)

    assert coverage.ready and fuzzer.ready, (coverage.blocked, fuzzer.blocked)
    assert counting.probes == 1
    assert coverage.probe_argv == fuzzer.probe_argv == probe_argv(python, (COVERAGE, HYPOTHESIS))
    assert [tool.to_evidence()["provided_by"] for tool in (*coverage.tools, *fuzzer.tools)] == [
        "repository environment", "repository environment"]
    # without the cache (a caller outside phase B) each call probes again
    resolve_tools(ports, attempt=1, interpreter=python, test_argv=pytest_argv(python), tools=(COVERAGE,))
    assert counting.probes == 2


def test_an_overlay_is_never_shared_between_repositories(tmp_path: Path) -> None:
    """An overlay is installed by a repository's own interpreter in its task's box — whatever that repository's
    environment did to the install stays with it: another repository (even with the same interpreter) gets its
    own overlay folder."""
    first, second = tmp_path / "a" / "repo", tmp_path / "b" / "repo"
    for path in (first, second):
        path.mkdir(parents=True)
    assert repository_tools(tmp_path / "tools", first) != repository_tools(tmp_path / "tools", second)
    assert repository_tools(tmp_path / "tools", first) == repository_tools(tmp_path / "tools", first / ".." / "repo")
    assert repository_tools(tmp_path / "tools", first).parent == tmp_path / "tools"
