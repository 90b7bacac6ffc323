"""What the coordinator accepts of an install the box wrote (issue 17): each tool's ``.dist-info``, nothing
reached through a link — checked before anything is moved into the data directory."""

from __future__ import annotations

from pathlib import Path

from codeflux.pipeline.tool_overlay import COVERAGE, installed_overlay, verify_installed


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
