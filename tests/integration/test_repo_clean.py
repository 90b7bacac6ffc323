"""`codeflux repo clean REPO` and doctor's "codeflux leftovers" row (issue 16 item 3): after the data directory is
deleted, codeflux's worktrees, ``codeflux/task/*`` branches and ``refs/codeflux/…`` refs in the user's repository
are listed, and removed only with ``--yes`` — a branch holding commits on no other branch saved first as a git
bundle that ``git bundle verify`` accepts — while the user's own branches and worktrees stay and no hook runs.
Real repository, real SQLite file, the real CLI."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeflux.coordinator.tasks.checkpoints import CheckpointService, CheckpointTrigger
from codeflux.coordinator.tasks.service import TaskService
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import git, run_git
from tests.fixtures.reviews import a_task_awaiting_review
from tests.fixtures.tasks import a_repository


def codeflux_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/codeflux/", "refs/codeflux/").split()


def worktree_paths(repo: Path) -> list[str]:
    return [line.removeprefix("worktree ") for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def install_hooks(repo: Path) -> Path:
    """Hooks that leave a marker when git runs them; a plain `git branch` proves they fire (positive control)."""
    marker = repo.parent / "hook-ran"
    for name in ("reference-transaction", "post-checkout", "pre-auto-gc"):
        hook = repo / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        hook.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["git", "branch", "probe-hooks"], cwd=repo, env=env, check=True, capture_output=True)
    subprocess.run(["git", "branch", "-D", "probe-hooks"], cwd=repo, env=env, check=True, capture_output=True)
    assert marker.exists()  # hooks do run for a plain git command here
    marker.unlink()
    return marker


@pytest.fixture
def leftovers(tmp_path: Path) -> tuple[RepositorySnapshot, DataLocation, dict[str, str]]:
    """Two tasks with worktrees under a data directory, one with a commit on its branch only, one with a
    checkpoint ref; the user's own branch and worktree; then the data directory is deleted."""
    snapshot = a_repository(tmp_path / "git")
    repo = snapshot.root
    location = DataLocation(directory=tmp_path / "data")
    db = open_store(location, create=True, migrate=True)
    try:
        service = TaskService(db, worktrees_root=location.worktrees)
        plain = a_task_awaiting_review(service, snapshot, {"pkg/calc.py": "CHANGED = 1\n"})
        CheckpointService(service.changes).capture_checkpoint(plain.task_id, CheckpointTrigger.MATERIAL_EDIT)
        committed = a_task_awaiting_review(service, snapshot, {"pkg/extra.py": "ONLY_HERE = 1\n"})
        git(committed.worktree.path, "add", "-A")
        git(committed.worktree.path, "commit", "-qm", "work only the task branch holds")
        unique = git(committed.worktree.path, "rev-parse", "HEAD").strip()
        # known to this database: never listed
        assert "no codeflux leftovers" in run_codeflux("repo", "clean", str(repo), data_dir=location.directory).out
    finally:
        db.close()
    git(repo, "branch", "feature")
    git(repo, "worktree", "add", "-q", str(tmp_path / "user-worktree"), "-b", "user-branch")
    shutil.rmtree(location.directory)
    return snapshot, location, {"plain": plain.task_id.value, "committed": committed.task_id.value,
                                "unique": unique}


def test_repo_clean_lists_then_removes_with_yes_bundling_unique_commits_and_leaving_the_users_things(
    leftovers: tuple[RepositorySnapshot, DataLocation, dict[str, str]], tmp_path: Path
) -> None:
    snapshot, location, ids = leftovers
    repo = snapshot.root
    marker = install_hooks(repo)
    before = codeflux_refs(repo)
    assert f"refs/heads/codeflux/task/{ids['committed']}" in before
    assert any(ref.startswith(f"refs/codeflux/checkpoints/{ids['plain']}/") for ref in before)

    listed = run_codeflux("repo", "clean", str(repo), data_dir=location.directory)

    assert listed.code == 0, listed.err
    assert "nothing removed; run again with --yes" in listed.out
    for task in (ids["plain"], ids["committed"]):
        assert f"worktree {task} at " in listed.out and f"branch codeflux/task/{task} at " in listed.out
    assert re.search(rf"branch codeflux/task/{ids['committed']} at \w+; holds commits on no other branch", listed.out)
    assert codeflux_refs(repo) == before  # listing removes nothing
    assert not location.database.exists()  # and creates no database

    cleaned = run_codeflux("repo", "clean", str(repo), "--yes", data_dir=location.directory)

    assert cleaned.code == 0, cleaned.err
    assert codeflux_refs(repo) == []
    assert worktree_paths(repo) == [str(repo), str(tmp_path / "user-worktree")]  # the user's worktree stays
    assert git(repo, "branch", "--format=%(refname:short)").split() == ["feature", "main", "user-branch"]
    assert (tmp_path / "user-worktree").is_dir()
    assert location.directory.stat().st_mode & 0o777 == 0o700  # recreated private, for the bundles
    bundles = sorted((location.directory / "bundles").glob("*.bundle"))
    assert {b.name.split("-tsk_")[1].split("-")[0] for b in bundles} == {
        ids["plain"].removeprefix("tsk_"), ids["committed"].removeprefix("tsk_")}  # checkpoint ref, commit
    for bundle in bundles:
        assert str(bundle) in cleaned.out
        assert run_git(repo, "bundle", "verify", str(bundle), check=False).returncode == 0
        assert not bundle.is_relative_to(repo)
    committed_bundle = next(b for b in bundles if ids["committed"] in b.name)
    heads = git(repo, "bundle", "list-heads", str(committed_bundle))
    assert f"{ids['unique']} refs/heads/codeflux/task/{ids['committed']}" in heads
    assert run_git(repo, "fsck", "--no-progress", check=False).returncode == 0
    assert not marker.exists()  # no hook of the repository ran
    again = run_codeflux("repo", "clean", str(repo), data_dir=location.directory)
    assert "no codeflux leftovers" in again.out


def test_doctor_counts_leftovers_in_the_repository_it_runs_in(
    leftovers: tuple[RepositorySnapshot, DataLocation, dict[str, str]]
) -> None:
    snapshot, location, _ = leftovers
    doctor = subprocess.run([sys.executable, "-m", "codeflux", "--data-dir", str(location.directory), "doctor",
                             "--json"], cwd=snapshot.root, capture_output=True, text=True, timeout=120, check=False)
    row = next(c for c in json.loads(doctor.stdout)["checks"] if c["id"] == "leftovers")
    assert row["status"] == "degraded" and f"in {snapshot.root} that no database knows" in row["summary"]
    assert "codeflux repo clean REPO" in row["remediation"]
    run_codeflux("repo", "clean", str(snapshot.root), "--yes", data_dir=location.directory)
    doctor = subprocess.run([sys.executable, "-m", "codeflux", "--data-dir", str(location.directory), "doctor",
                             "--json"], cwd=snapshot.root, capture_output=True, text=True, timeout=120, check=False)
    row = next(c for c in json.loads(doctor.stdout)["checks"] if c["id"] == "leftovers")
    assert row["status"] == "ok"


def test_a_worktree_with_uncommitted_changes_is_kept_with_its_branch(tmp_path: Path) -> None:
    snapshot = a_repository(tmp_path / "git")
    location = DataLocation(directory=tmp_path / "data")
    other = DataLocation(directory=tmp_path / "elsewhere")
    db = open_store(other, create=True, migrate=True)
    try:
        task = a_task_awaiting_review(TaskService(db, worktrees_root=tmp_path / "loose"), snapshot,
                                      {"pkg/calc.py": "UNSAVED = 1\n"})
    finally:
        db.close()
    shutil.rmtree(other.directory)
    cleaned = run_codeflux("repo", "clean", str(snapshot.root), "--yes", data_dir=location.directory)
    assert cleaned.code == 0, cleaned.err
    assert "holds uncommitted changes, left alone" in cleaned.out
    assert (task.worktree.path / "pkg/calc.py").read_text() == "UNSAVED = 1\n"
    assert f"refs/heads/codeflux/task/{task.task_id}" in codeflux_refs(snapshot.root)
