"""The atoms of a task's diff, read from a real task worktree and its base commit (issue 17)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeflux.domain.atoms import AtomChange
from codeflux.domain.ids import TaskId
from codeflux.gitwork.diff import diff_against_base
from codeflux.gitwork.worktrees import TaskWorktree, create_task_worktree
from codeflux.pipeline.atoms import atoms_of_diff
from tests.fixtures.repos import RepoState, make_repository

TASK = TaskId.parse("tsk_0123456789abcdef")


@pytest.fixture
def worktree(tmp_path: Path) -> TaskWorktree:
    built = make_repository(tmp_path / "src", RepoState.CLEAN)
    return create_task_worktree(built.path, worktrees_root=tmp_path / "worktrees", repo_key="repo1", task_id=TASK,
                                base_commit=built.head)


def files_of(worktree: TaskWorktree) -> list[dict[str, object]]:
    return [{"path": f.path, "kind": f.kind.value} for f in diff_against_base(worktree).files]


def test_changed_and_added_functions_outside_tests_are_the_atoms(worktree: TaskWorktree) -> None:
    calc = worktree.path / "pkg" / "calc.py"
    changed = calc.read_text().replace("return a - b", "return a - b - 0")
    calc.write_text(changed + "\n\ndef mul(a, b):\n    return a * b\n")
    (worktree.path / "pkg" / "fresh.py").write_text("def one() -> int:\n    return 1\n")
    (worktree.path / "tests" / "test_calc.py").write_text("def test_more():\n    assert True\n")
    (worktree.path / "notes.txt").write_text("not python\n")

    found = atoms_of_diff(worktree, files_of(worktree))

    assert {(atom.qualified_name, atom.change) for atom in found.atoms} == {
        ("pkg.calc.sub", AtomChange.CHANGED), ("pkg.calc.mul", AtomChange.ADDED), ("pkg.fresh.one", AtomChange.ADDED)}
    assert found.not_examined == {}
    assert found.to_evidence()["atoms"][0]["path"] == "pkg/calc.py"


def test_a_linked_file_and_a_file_that_does_not_parse_are_listed_not_examined(worktree: TaskWorktree,
                                                                               tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("def secret():\n    return 1\n")
    os.symlink(outside, worktree.path / "pkg" / "linked.py")
    (worktree.path / "pkg" / "calc.py").write_text("def add(a, b:\n")

    found = atoms_of_diff(worktree, files_of(worktree))

    assert found.atoms == ()
    assert found.not_examined["pkg/calc.py"].startswith("does not parse")
    assert "pkg/linked.py" in found.not_examined
