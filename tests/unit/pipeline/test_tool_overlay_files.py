"""What the coordinator accepts of an install the box wrote (issue 17): each tool's ``.dist-info``, nothing
reached through a link — checked before anything is moved into the data directory."""

from __future__ import annotations

from pathlib import Path

from codeflux.pipeline.ports import ToolSource
from codeflux.pipeline.tool_overlay import (
    COVERAGE,
    _remember_key,
    install_argv,
    install_to_settle,
    installed_overlay,
    verify_installed,
)


def site_with_coverage(root: Path) -> Path:
    site = root / "site"
    (site / "coverage").mkdir(parents=True)
    (site / "coverage" / "__init__.py").write_text("")
    (site / "coverage-7.9.1.dist-info").mkdir()
    return site


def test_an_install_names_each_tool_s_version_from_its_dist_info(tmp_path: Path) -> None:
    assert verify_installed(site_with_coverage(tmp_path), [COVERAGE]) == {"coverage": "7.9.1"}


def test_a_symbolic_link_or_a_missing_tool_is_refused(tmp_path: Path) -> None:
    site = site_with_coverage(tmp_path)
    (site / "coverage" / "data.py").symlink_to("/etc/passwd")
    assert str(verify_installed(site, [COVERAGE])).startswith("the install wrote a symbolic link")
    empty = tmp_path / "empty" / "site"
    empty.mkdir(parents=True)
    assert verify_installed(empty, [COVERAGE]) == "the install did not leave coverage"


def test_an_overlay_counts_only_with_its_manifest_naming_its_key(tmp_path: Path) -> None:
    (tmp_path / "k" / "site").mkdir(parents=True)
    assert installed_overlay(tmp_path, "k") is None
    (tmp_path / "k" / "codeflux-overlay.json").write_text('{"key": "other", "tools": {"coverage": "7"}}')
    assert installed_overlay(tmp_path, "k") is None
    (tmp_path / "k" / "codeflux-overlay.json").write_text('{"key": "k", "tools": {"coverage": "7"}}')
    assert installed_overlay(tmp_path, "k") == (tmp_path / "k" / "site", {"coverage": "7"})


def test_the_pre_flight_asks_for_an_install_only_when_it_may_be_needed(tmp_path: Path) -> None:
    """The runner settles the install request before validation only when a source is configured and, as far as
    the host can see, the environment lacks the tool and no verified overlay of its key holds it."""
    source = ToolSource(wheelhouse=tmp_path / "wheelhouse")
    tools = tmp_path / "tools"
    tools.mkdir()
    venv = tmp_path / "venv"
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = str(venv / "bin" / "python")

    assert install_to_settle(python, tools_root=tools, source=None) is None  # nothing to install from
    assert install_to_settle(python, tools_root=tools, source=source) == install_argv(python, source)
    (venv / "lib" / "python3.11" / "site-packages" / "coverage").mkdir()
    assert install_to_settle(python, tools_root=tools, source=source) is not None  # hypothesis is still missing
    (venv / "lib" / "python3.11" / "site-packages" / "hypothesis").mkdir()
    assert install_to_settle(python, tools_root=tools, source=source) is None  # the environment's own

    # python3 on PATH: the key the box's probe found last time, with its verified overlay, means no card
    assert install_to_settle("python3", tools_root=tools, source=source) is not None
    _remember_key(tools, "python3", "cpython-3.11-linux_x86_64")
    site_with_coverage(tools / "cpython-3.11-linux_x86_64")
    (tools / "cpython-3.11-linux_x86_64" / "codeflux-overlay.json").write_text(
        '{"key": "cpython-3.11-linux_x86_64", "tools": {"coverage": "7.9.1"}}')
    # an overlay made before Hypothesis joined the check tools: the next install (of every tool) replaces it
    assert install_to_settle("python3", tools_root=tools, source=source) == install_argv("python3", source)
    (tools / "cpython-3.11-linux_x86_64" / "codeflux-overlay.json").write_text(
        '{"key": "cpython-3.11-linux_x86_64", "tools": {"coverage": "7.9.1", "hypothesis": "6.170.17"}}')
    assert install_to_settle("python3", tools_root=tools, source=source) is None
