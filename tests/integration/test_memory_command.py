"""``codeflux memory list|show|invalidate|confirm|export`` as separate processes on a real data directory and a real git
repository: verdicts with reasons, a person's invalidation cascading to a derived entry, quarantine refusing a
second invalidation, and an export that is a new 0600 file and never overwrites one."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from codeflux.coordinator.tasks.service import TaskService
from codeflux.gitwork.repository import open_repository
from codeflux.memory.learn import learn_file_test_map, learn_repository_fact
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.cli import run_codeflux
from tests.fixtures.repos import make_repository, write_files


def test_memory_commands_show_verdicts_invalidate_a_chain_and_export_to_a_new_file(
    db: Database, data_location: DataLocation, tmp_path: Path,
) -> None:
    repo = make_repository(tmp_path).path
    TaskService(db, worktrees_root=data_location.worktrees).register_repository(open_repository(repo))
    mapping = learn_file_test_map(db, root=repo, file="pkg/calc.py", tests=["tests/test_calc.py::test_add"])
    command = learn_repository_fact(db, root=repo, topic="test-command", fact="pytest tests/test_calc.py",
                                    derived_from=[mapping.entry_id])
    data = data_location.directory

    listed = run_codeflux("memory", "list", data_dir=data)
    assert listed.code == 0, listed.err
    assert listed.out.count("usable (applicable)") == 2

    write_files(repo, {"pkg/calc.py": "def add(a, b):\n    return a + b + 0\n"})
    shown = run_codeflux("memory", "show", mapping.entry_id.value, data_dir=data)
    assert shown.code == 0, shown.err
    assert "not usable (source-changed): pkg/calc.py changed since it was learned" in shown.out
    assert f"{command.entry_id.value} (active) is derived-from this" in shown.out

    done = run_codeflux("memory", "invalidate", mapping.entry_id.value, "--reason", "calc changed", data_dir=data)
    assert done.code == 0, done.err
    assert f"quarantined {command.entry_id.value} (derived from it)" in done.out
    again = run_codeflux("memory", "invalidate", mapping.entry_id.value, "--reason", "again", data_dir=data)
    assert again.code == 1 and "cannot go from quarantined to quarantined" in again.err
    quarantined = run_codeflux("memory", "list", "--state", "quarantined", data_dir=data)
    assert quarantined.out.count("not usable (quarantined)") == 2

    output = tmp_path / "memory.json"
    exported = run_codeflux("memory", "export", "--output", str(output), data_dir=data)
    assert exported.code == 0, exported.err
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    document = json.loads(output.read_text())
    assert {e["id"] for e in document["entries"]} == {mapping.entry_id.value, command.entry_id.value}
    assert document["edges"] == [{"dependent": command.entry_id.value, "kind": "derived-from",
                                  "source": mapping.entry_id.value}]
    before = output.read_bytes()
    refused = run_codeflux("memory", "export", "--output", str(output), data_dir=data)
    assert refused.code == 2 and output.read_bytes() == before


def test_memory_confirm_keeps_an_entry_flagged_for_review(db: Database, data_location: DataLocation,
                                                         tmp_path: Path) -> None:
    repo = make_repository(tmp_path).path
    TaskService(db, worktrees_root=data_location.worktrees).register_repository(open_repository(repo))
    root = learn_repository_fact(db, root=repo, topic="test-command", fact="pytest -q")
    influenced = learn_repository_fact(db, root=repo, topic="package-layout", fact="flat",
                                       influenced_by=[root.entry_id])
    data = data_location.directory
    early = run_codeflux("memory", "confirm", influenced.entry_id.value, "--reason", "fine", data_dir=data)
    assert early.code == 1 and "cannot go from active to active" in early.err  # nothing to review yet
    flagged = run_codeflux("memory", "invalidate", root.entry_id.value, "--reason", "stale", data_dir=data)
    assert f"needs review {influenced.entry_id.value} (influenced by it)" in flagged.out

    kept = run_codeflux("memory", "confirm", influenced.entry_id.value, "--reason", "layout unchanged", data_dir=data)
    assert kept.code == 0, kept.err
    assert "usable (applicable)" in kept.out and "active (person): layout unchanged" in kept.out
    missing = run_codeflux("memory", "confirm", influenced.entry_id.value, data_dir=data)
    assert missing.code == 2 and "--reason" in missing.err
