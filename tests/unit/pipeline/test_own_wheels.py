"""codeflux's own check tools rebuilt as wheels (the overlay's default source): real distributions of the
environment running the tests, real zip files, checked the way pip reads them."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import zipfile
from pathlib import Path

import pytest

from codeflux.cli.run import headless_policy
from codeflux.coordinator.runs.headless import NO_TOOLS_INSTALL, HeadlessPolicy, PreapprovedOperation, tool_source_for
from codeflux.pipeline.own_wheels import rebuild_wheels
from codeflux.pipeline.ports import WHEELHOUSE_VARIABLE, ToolSource
from codeflux.pipeline.tool_overlay import install_argv


def test_coverage_is_rebuilt_as_one_wheel_whose_record_matches_every_member(tmp_path: Path) -> None:
    assert rebuild_wheels(["coverage"], tmp_path / "wheels") is None

    (wheel,) = sorted((tmp_path / "wheels").iterdir())
    version = importlib.metadata.version("coverage")
    assert wheel.name.startswith(f"coverage-{version}-cp3")  # a binary wheel keeps its interpreter tag
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        record = archive.read(f"coverage-{version}.dist-info/RECORD").decode().splitlines()
        listed = {line.split(",")[0]: line.split(",")[1:] for line in record}
        for name in names:
            assert not name.startswith("..") and "__pycache__" not in name and not name.endswith(".pyc")
            if name.endswith("/RECORD"):
                continue
            data = archive.read(name)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert listed[name] == [f"sha256={digest}", str(len(data))]
    assert "coverage/__init__.py" in names and f"coverage-{version}.dist-info/WHEEL" in names
    assert f"coverage-{version}.dist-info/INSTALLER" not in names  # install-time files are left out
    assert set(listed) == set(names)


def test_a_tool_s_installed_requirements_come_along_and_a_missing_tool_is_named(tmp_path: Path) -> None:
    assert rebuild_wheels(["hypothesis"], tmp_path / "wheels") is None
    built = {path.name.split("-")[0] for path in (tmp_path / "wheels").iterdir()}
    assert {"hypothesis", "sortedcontainers"} <= built

    assert rebuild_wheels(["no-such-tool"], tmp_path / "none") == "no-such-tool is not installed with codeflux"
    assert not (tmp_path / "none").exists()


def test_a_headless_run_asks_for_no_install_unless_allowed_and_the_default_source_is_codeflux_s_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WHEELHOUSE_VARIABLE, raising=False)
    monkeypatch.delenv("CODEFLUX_TOOL_INDEX_URL", raising=False)
    assert ToolSource.from_environment({}).own
    assert ToolSource.from_environment({}).describe() == "codeflux's own installation"
    assert ToolSource.from_environment({}).pip_arguments() == ("--no-index", "--find-links", "wheels")
    assert ToolSource.from_environment({"CODEFLUX_TOOL_INDEX_URL": "https://example.test/simple"}).needs_network

    assert tool_source_for(headless_policy([]), ToolSource()).declined == NO_TOOLS_INSTALL
    allowed = tool_source_for(headless_policy([], check_tools=True), ToolSource())
    assert allowed.declined is None and allowed.own


def test_the_exact_install_request_among_the_pre_approved_operations_also_lets_a_headless_run_install() -> None:
    source = ToolSource()
    exact = PreapprovedOperation.command(install_argv("/repo/.venv/bin/python", source))
    assert tool_source_for(HeadlessPolicy.allowing([exact]), source) == source
    other = PreapprovedOperation.command(("/repo/.venv/bin/python", "-m", "pip", "install", "requests"))
    assert tool_source_for(HeadlessPolicy.allowing([other]), source).declined == NO_TOOLS_INSTALL
    assert tool_source_for(None, source) == source  # a person decides the install's card
