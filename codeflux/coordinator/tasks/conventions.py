"""Conventions memory learns (issue 19, kind ``convention``): from a person's approval of an instruction file and
from a person's review outcome.

* **An approved instruction file** — once the approval committed, each list item of exactly the approved content
  (:func:`~codeflux.domain.instructions.instruction_statements`) becomes a ``convention`` entry resting on the file
  (its blob), with the approval as evidence. Editing the file makes them inapplicable (the applicability check);
  **revoking the approval quarantines them in the revocation's transaction**
  (:func:`quarantine_instruction_conventions`), so a statement of a file no longer approved never reaches anything
  through memory.
* **A rejection** — the reason a person gave for rejecting a task's diff becomes a ``convention`` of origin
  ``review`` for later tasks of the repository (no file: it holds while the repository, toolchain and dependencies
  are the same), with the task as evidence.

Learning runs after the decision committed and never changes it: what could not be learned is returned as one
safe line (:class:`~codeflux.coordinator.tasks.learning.Learned`) and the decision stands. The
planner's and the loop's memory block show review conventions; an instruction file's statements are not repeated
there, because the approved file itself is sent whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from codeflux.coordinator.tasks.learning import Learned
from codeflux.domain.errors import CodefluxError, safe_error_message
from codeflux.domain.ids import MemoryEntryId, TaskId
from codeflux.domain.instructions import instruction_statements
from codeflux.domain.memory import ConventionOrigin, EvidenceKind, EvidenceRef, MemoryKind, MemoryState, StateCause
from codeflux.gitwork.instruction_files import read_instruction_file
from codeflux.memory.checkout import probe_toolchain
from codeflux.memory.learn import learn_convention
from codeflux.store.database import Database, Transaction
from codeflux.store.memory import list_memory_entries, memory_entry, quarantine_memory_entry
from codeflux.store.tasks import require_task

__all__ = [
    "learn_instruction_conventions",
    "learn_review_convention",
    "quarantine_instruction_conventions",
]

_MAX_LISTED: Final = 10_000


def _failed(what: str, error: Exception) -> Learned:
    detail = safe_error_message(error) if isinstance(error, CodefluxError) else type(error).__name__
    return Learned(skipped=(f"{what}: {detail}",))


def learn_instruction_conventions(db: Database, root: Path, *, path: str, sha256: str,
                                  approval_id: str) -> Learned:
    """Record the statements of ``path`` in the checkout at ``root`` as conventions, when it still holds exactly
    the approved ``sha256`` (else nothing: the person approved other content)."""
    try:
        file = read_instruction_file(root, path)
        if file.sha256 != sha256 or file.text is None:
            return Learned(skipped=(f"{path} changed since it was approved",))
        toolchain = probe_toolchain(root)
        return Learned(entries=tuple(
            learn_convention(db, root=root, statement=statement, origin=ConventionOrigin.INSTRUCTION_FILE,
                             source=path, sha256=sha256, toolchain=toolchain,
                             evidence=[EvidenceRef(kind=EvidenceKind.DECISION, ref=approval_id)]).entry_id
            for statement in instruction_statements(file.text)))
    except (CodefluxError, OSError) as error:
        return _failed(f"the statements of {path}", error)


def quarantine_instruction_conventions(tx: Transaction, *, root_commits: tuple[str, ...], path: str, sha256: str,
                                       at_us: int) -> tuple[MemoryEntryId, ...]:
    """In the revocation's transaction: quarantine every convention learned from ``path`` at ``sha256`` in the
    repository of ``root_commits`` that is not quarantined yet."""
    done: list[MemoryEntryId] = []
    entries = [entry for root in root_commits
               for entry in list_memory_entries(tx, root_commit=root, kind=MemoryKind.CONVENTION, limit=_MAX_LISTED)]
    for entry in entries:
        body = entry.body
        if (body.get("origin") != ConventionOrigin.INSTRUCTION_FILE or body.get("source") != path
                or body.get("sha256") != sha256):
            continue
        if memory_entry(tx, entry.entry_id).state is MemoryState.QUARANTINED:
            continue
        quarantine_memory_entry(tx, entry_id=entry.entry_id, cause=StateCause.PERSON, at_us=at_us,
                                reason=f"the approval of {path} at sha256 {sha256[:12]} was revoked")
        done.append(entry.entry_id)
    return tuple(done)


def learn_review_convention(db: Database, task_id: TaskId, *, reason: str) -> Learned:
    """Record why a person rejected ``task_id``'s diff as a review convention of its repository."""
    try:
        root = db.read(lambda view: require_task(view, task_id)).repository_root
        statement = f"a person rejected the change of task {task_id.value} because: {' '.join(reason.split())}"
        entry = learn_convention(db, root=root, statement=statement[:600], origin=ConventionOrigin.REVIEW,
                                 evidence=[EvidenceRef(kind=EvidenceKind.REVIEW, ref=task_id.value),
                                           EvidenceRef(kind=EvidenceKind.TASK, ref=task_id.value)])
        return Learned(entries=(entry.entry_id,))
    except (CodefluxError, OSError) as error:
        return _failed("the rejection's reason", error)
