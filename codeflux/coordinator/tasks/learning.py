"""What an accepted task teaches memory (issue 19): recorded once the change landed, bound to the person's checkout.

From the accepted attempt's ledger, as recorded (nothing is measured again):

* a ``repository-fact`` ``test-command`` — the argv stage 28 ran the suite with, resting on the repository's test
  configuration files that exist (``pyproject.toml``, ``setup.cfg``, ``pytest.ini``, ``tox.ini``), so editing them
  makes the fact inapplicable;
* per changed file whose atoms stage 11 verified, a ``file-test-map`` — the tests that cover them (coverage contexts,
  as 11 recorded them), resting on the file and those tests' files;
* per atom stage 11 verified (every seeded order passed) that the plan declared (stage 5's evidence names the
  declaration), an ``atom`` with its contract hash — what stage 6 recall looks for in a later task.

Each entry's evidence names the task and the attempt's ledger. Learning never decides anything about the task: it
runs after the task completed, and a failure (an unreadable checkout, a source gone) is returned as one safe line in
:attr:`Learned.skipped` and leaves the accept as it was. Every entry is checked for applicability at each use
(:mod:`codeflux.memory.recall`).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Final

from codeflux.domain.contracts import contract_hash
from codeflux.domain.errors import CodefluxError, safe_error_message
from codeflux.domain.ids import MemoryEntryId, TaskId
from codeflux.domain.memory import EvidenceKind, EvidenceRef, MemoryEntry
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.memory.learn import learn_atom, learn_file_test_map, learn_repository_fact
from codeflux.store.database import Database, ReadView
from codeflux.store.stage_ledger import latest_run_attempt, ledger_of_attempt
from codeflux.store.tasks import require_task

__all__ = ["TEST_CONFIGURATION", "Learned", "learn_from_accepted"]

TEST_CONFIGURATION: Final = ("pyproject.toml", "setup.cfg", "pytest.ini", "tox.ini")


@dataclass(frozen=True, slots=True, kw_only=True)
class Learned:
    """The entries one accepted task recorded, and what could not be learned (each a safe line)."""

    entries: tuple[MemoryEntryId, ...] = ()
    skipped: tuple[str, ...] = field(default_factory=tuple)


def _items(evidence: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
    found = evidence.get(key)
    return [item for item in found if isinstance(item, Mapping)] if isinstance(found, list) else []


def _texts(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


@dataclass(frozen=True, slots=True, kw_only=True)
class _Accepted:
    root: Path
    attempt: int
    evidence: Mapping[StageName, Mapping[str, object]]
    outcomes: Mapping[StageName, StageOutcome]


def _accepted(view: ReadView, task_id: TaskId) -> _Accepted | None:
    task = require_task(view, task_id)
    attempt = latest_run_attempt(view, task_id)
    if attempt is None:
        return None
    rows = ledger_of_attempt(view, task_id, attempt.attempt)
    return _Accepted(root=task.repository_root, attempt=attempt.attempt,
                     evidence={row.verdict.stage: row.evidence for row in rows},
                     outcomes={row.verdict.stage: row.verdict.outcome for row in rows})


def _verified(accepted: _Accepted) -> list[Mapping[str, object]]:
    """Stage 11's atoms whose every seeded order passed (no finding), when 11 held."""
    if accepted.outcomes.get(StageName.ATOM_VERIFICATION) is not StageOutcome.SATISFIED:
        return []
    atoms = _items(accepted.evidence.get(StageName.ATOM_VERIFICATION, {}), "atoms")
    return [atom for atom in atoms if not _texts(atom.get("findings")) and _texts(atom.get("tests"))]


def _declared(accepted: _Accepted) -> dict[str, tuple[str, Mapping[str, object]]]:
    """Qualified name → (path, declaration) of every atom stage 5 matched to a declaration of the plan."""
    found: dict[str, tuple[str, Mapping[str, object]]] = {}
    for atom in _items(accepted.evidence.get(StageName.CONTRACTS, {}), "atoms"):
        declared = atom.get("declared")
        name, path = atom.get("qualified_name"), atom.get("path")
        if isinstance(declared, Mapping) and isinstance(name, str) and isinstance(path, str):
            found[name] = (path, declared)
    return found


def learn_from_accepted(db: Database, task_id: TaskId) -> Learned:
    """Record what the accepted task's newest attempt showed (see the module docstring); never raises a
    :class:`CodefluxError` or an ``OSError``: what could not be learned is in ``skipped``."""
    try:
        accepted = db.read(lambda view: _accepted(view, task_id))
    except CodefluxError as error:
        return _skipped((), f"the task's ledger could not be read: {safe_error_message(error)}")
    if accepted is None:
        return Learned(skipped=("the task has no attempt",))
    task_ref = EvidenceRef(kind=EvidenceKind.TASK, ref=task_id.value)
    ledger_ref = EvidenceRef(kind=EvidenceKind.STAGE_LEDGER, ref=f"{task_id.value}#attempt-{accepted.attempt}")
    learned: list[MemoryEntryId] = []
    skipped: list[str] = []

    def attempt(what: str, record: Callable[[], MemoryEntry]) -> None:
        try:
            learned.append(record().entry_id)
        except CodefluxError as error:
            skipped.append(f"{what}: {safe_error_message(error)}")
        except OSError as error:
            skipped.append(f"{what}: {type(error).__name__}")

    tests = accepted.evidence.get(StageName.INTEGRATION_TESTS, {})
    argv = _texts(tests.get("argv"))
    if argv and accepted.outcomes.get(StageName.INTEGRATION_TESTS) is StageOutcome.SATISFIED:
        sources = [name for name in TEST_CONFIGURATION if (accepted.root / name).is_file()]
        attempt("the test command", partial(learn_repository_fact, db, root=accepted.root, topic="test-command",
                                            fact=shlex.join(argv), sources=sources, evidence=[task_ref, ledger_ref]))
    declared = _declared(accepted)
    covering: dict[str, set[str]] = {}
    for atom in _verified(accepted):
        name = str(atom.get("qualified_name", ""))
        if name not in declared:
            continue
        path, declaration = declared[name]
        covering.setdefault(path, set()).update(_texts(atom.get("tests")))
        digest = contract_hash(str(declaration.get("signature", "")), _texts(declaration.get("effects")))
        attempt(f"atom {name}", partial(learn_atom, db, root=accepted.root, qualified_name=name, path=path,
                                        contract_hash=digest, evidence=[task_ref, ledger_ref]))
    for path, names in sorted(covering.items()):
        attempt(f"the tests covering {path}", partial(learn_file_test_map, db, root=accepted.root, file=path,
                                                      tests=sorted(names), evidence=[task_ref, ledger_ref]))
    return _skipped(tuple(learned), *skipped)


def _skipped(entries: Sequence[MemoryEntryId], *reasons: str) -> Learned:
    return Learned(entries=tuple(entries), skipped=tuple(reasons))
