"""Memory judging at a task's base revision: the facts of a commit (blobs and dependency set read from git's objects)
equal the facts of a checkout on disk at that commit, and differ once the commit moves on."""

from __future__ import annotations

from pathlib import Path

from codeflux.domain.memory import ApplicabilityReason, judge_applicability
from codeflux.memory.checkout import (
    blob_hash_of_file,
    current_facts,
    dependency_hash_at,
    dependency_hash_of,
    facts_at_revision,
)
from codeflux.memory.learn import learn_file_test_map
from codeflux.store.database import Database
from tests.fixtures.repos import commit_all, git, make_repository, write_files

DEPENDENCIES = {
    "pyproject.toml": '[project]\nname = "calc"\ndependencies = ["attrs>=22"]\n',
    "requirements-dev.txt": "pytest>=8  # tests\n",
    "requirements/docs.txt": "sphinx\n",
    "uv.lock": "version = 1\n",
}


def test_a_commit_s_facts_equal_the_checkout_s_at_that_commit_and_an_entry_is_judged_there(
        tmp_path: Path, db: Database) -> None:
    repo = make_repository(tmp_path / "src").path
    write_files(repo, dict(DEPENDENCIES))
    base = commit_all(repo, "dependencies")
    paths = ["pkg/calc.py", "tests/test_calc.py", "absent.py"]

    at_base = facts_at_revision(repo, base, paths)
    on_disk = current_facts(repo, paths)

    assert at_base.dependency_hash == on_disk.dependency_hash == dependency_hash_of(repo)
    assert at_base.blobs == on_disk.blobs and at_base.blobs["absent.py"] is None
    assert at_base.blobs["pkg/calc.py"] == blob_hash_of_file(repo, "pkg/calc.py")
    assert at_base.revision == base and on_disk.revision is None
    entry = learn_file_test_map(db, root=repo, file="pkg/calc.py", tests=["tests/test_calc.py::test_add"])

    # the person moves on: the source and a dependency change in a later commit
    write_files(repo, {"pkg/calc.py": "def add(a, b):\n    return b + a\n",
                       "requirements/docs.txt": "sphinx>=7\n"})
    commit_all(repo, "later")

    assert dependency_hash_at(repo, base) == at_base.dependency_hash != dependency_hash_of(repo)
    assert judge_applicability(entry, facts_at_revision(repo, base, paths)).applicable  # still true at the base
    later = judge_applicability(entry, facts_at_revision(repo, git(repo, "rev-parse", "HEAD").strip(), paths))
    assert later.reason is ApplicabilityReason.OTHER_DEPENDENCIES


def test_the_verdict_names_the_revision_it_judged_at(tmp_path: Path, db: Database) -> None:
    repo = make_repository(tmp_path / "src").path
    base = git(repo, "rev-parse", "HEAD").strip()
    entry = learn_file_test_map(db, root=repo, file="pkg/calc.py", tests=["tests/test_calc.py::test_add"])
    write_files(repo, {"tests/test_calc.py": "def test_add():\n    pass\n"})
    head = commit_all(repo, "tests change")

    verdict = judge_applicability(entry, facts_at_revision(repo, head, ["pkg/calc.py", "tests/test_calc.py"]))

    assert verdict.reason is ApplicabilityReason.SOURCE_CHANGED
    assert verdict.detail.startswith("tests/test_calc.py changed since it was learned (")
    assert verdict.detail.endswith(f"(judged at revision {head[:12]})")
    held = judge_applicability(entry, facts_at_revision(repo, base, ["pkg/calc.py", "tests/test_calc.py"]))
    assert held.applicable and held.detail.endswith(f"every source file unchanged at revision {base[:12]}")
