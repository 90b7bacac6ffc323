"""Recording what a task learned: plain functions other code calls with the facts it found.

Each function takes the checkout the fact was observed in (a repository or a task worktree) and records one entry
in one transaction, bound to that checkout as it is now: its root commit, the commit checked out, its dependency
hash, its toolchain (the caller's, else probed) and the blob hash of every source file the fact rests on (a source
that is not a file of the checkout is refused: a fact cannot rest on nothing). Provenance (``derived_from``,
``influenced_by``) names earlier entries; ``replaces`` names the entry a new one takes the place of (the only way a
quarantined entry's place is filled).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import MemoryEntryId
from codeflux.domain.memory import (
    ConventionOrigin,
    EvidenceKind,
    EvidenceRef,
    MemoryEntry,
    MemoryKind,
    NewMemoryEntry,
    SourceFile,
    Toolchain,
)
from codeflux.memory.checkout import (
    blob_hash_of_file,
    dependency_hash_of,
    head_commit_of,
    probe_toolchain,
    root_commit_of,
)
from codeflux.store.database import Database, Transaction
from codeflux.store.memory import record_memory_entry

__all__ = [
    "learn",
    "learn_atom",
    "learn_convention",
    "learn_file_test_map",
    "learn_repository_fact",
    "learn_reviewed_command",
]


def learn(db: Database, *, root: Path, kind: MemoryKind, text: str, body: Mapping[str, object],
          sources: Sequence[str] = (), evidence: Sequence[EvidenceRef] = (),
          derived_from: Sequence[MemoryEntryId] = (), influenced_by: Sequence[MemoryEntryId] = (),
          replaces: MemoryEntryId | None = None, toolchain: Toolchain | None = None,
          at_us: int | None = None) -> MemoryEntry:
    """Record one entry of ``kind`` bound to the checkout at ``root`` now (see the module docstring)."""
    root_commit = root_commit_of(root)
    object_format = "sha256" if len(root_commit) == 64 else "sha1"
    files = []
    for path in sorted(set(sources)):
        blob = blob_hash_of_file(root, path, object_format=object_format)
        if blob is None:
            raise InvalidValueError(kind="memory source", reason=f"{path} is not a file of the checkout")
        files.append(SourceFile(path=path, blob_sha=blob))
    new = NewMemoryEntry(kind=kind, text=text, body=dict(body), root_commit=root_commit,
                         toolchain=probe_toolchain(root) if toolchain is None else toolchain,
                         dependency_hash=dependency_hash_of(root), learned_at_commit=head_commit_of(root),
                         sources=tuple(files), evidence=tuple(evidence), derived_from=tuple(derived_from),
                         influenced_by=tuple(influenced_by), replaces=replaces)
    entry_id = MemoryEntryId.from_entropy(os.urandom(16))
    when = time.time_ns() // 1000 if at_us is None else at_us

    def work(tx: Transaction) -> MemoryEntry:
        return record_memory_entry(tx, entry_id=entry_id, entry=new, at_us=when)

    return db.write(work)


def learn_repository_fact(db: Database, *, root: Path, topic: str, fact: str, sources: Sequence[str] = (),
                          evidence: Sequence[EvidenceRef] = (), derived_from: Sequence[MemoryEntryId] = (),
                          influenced_by: Sequence[MemoryEntryId] = (),
                          toolchain: Toolchain | None = None) -> MemoryEntry:
    """A repository fact (``topic``: ``test-command``, ``package-layout``, ``interpreter``, ``entry-point`` …)."""
    return learn(db, root=root, kind=MemoryKind.REPOSITORY_FACT, text=f"{topic}: {fact}",
                 body={"topic": topic, "fact": fact}, sources=sources, evidence=evidence, derived_from=derived_from,
                 influenced_by=influenced_by, toolchain=toolchain)


def learn_file_test_map(db: Database, *, root: Path, file: str, tests: Sequence[str],
                        contexts: Mapping[str, Sequence[str]] | None = None, evidence: Sequence[EvidenceRef] = (),
                        toolchain: Toolchain | None = None) -> MemoryEntry:
    """Which tests cover ``file``, from coverage contexts: ``tests`` are pytest node ids (``tests/t.py::test_x``);
    ``contexts`` optionally maps each covered function to the node ids that reached it. The file and every test
    file are the entry's sources, so a change to any of them makes the map inapplicable."""
    if not tests:
        raise InvalidValueError(kind="file-test map", reason="name at least one covering test")
    test_files = {test.split("::", 1)[0] for test in tests}
    return learn(db, root=root, kind=MemoryKind.FILE_TEST_MAP, text=f"tests covering {file}: {' '.join(tests)}",
                 body={"file": file, "tests": sorted(tests),
                       "contexts": {name: sorted(ids) for name, ids in (contexts or {}).items()}},
                 sources=[file, *sorted(test_files)],
                 evidence=[*evidence, EvidenceRef(kind=EvidenceKind.COVERAGE, ref=file)], toolchain=toolchain)


def learn_atom(db: Database, *, root: Path, qualified_name: str, path: str, contract_hash: str,
               evidence: Sequence[EvidenceRef] = (), toolchain: Toolchain | None = None) -> MemoryEntry:
    """A verified atom: ``qualified_name`` in ``path`` with its contract hash, at the commit checked out."""
    return learn(db, root=root, kind=MemoryKind.ATOM, text=f"atom {qualified_name} contract {contract_hash}",
                 body={"name": qualified_name, "path": path, "contract_hash": contract_hash}, sources=[path],
                 evidence=evidence, toolchain=toolchain)


def learn_reviewed_command(db: Database, *, root: Path, text: str, tool: str, arguments: Mapping[str, object],
                           operation_identity: str, repository_identity: str, allowed: str, decision_id: str,
                           task_id: str, request_id: str, decided_at_us: int,
                           toolchain: Toolchain | None = None) -> MemoryEntry:
    """An exact operation a person allowed: ``tool`` with its ``arguments`` (a command's ``argv`` as a list, never a
    shell string), its task identity (``op_…``) and repository identity (``rop_…``), how it was ``allowed``
    (``allowed-once``, ``allowed-for-task``, ``allowed-for-repository``) and the decision it came from. ``text`` is
    what candidate search matches (the program and its arguments, and the repository identity)."""
    argv = arguments.get("argv") if tool == "run_command" else None
    body: dict[str, object] = {"tool": tool, "arguments": dict(arguments), "operation_identity": operation_identity,
                               "repository_identity": repository_identity, "allowed": allowed,
                               "decision_id": decision_id, "task_id": task_id, "request_id": request_id,
                               "decided_at_us": decided_at_us}
    if isinstance(argv, list):
        body["argv"] = list(argv)
    return learn(db, root=root, kind=MemoryKind.REVIEWED_COMMAND, text=text, body=body,
                 evidence=[EvidenceRef(kind=EvidenceKind.DECISION, ref=decision_id),
                           EvidenceRef(kind=EvidenceKind.TASK, ref=task_id)], toolchain=toolchain)


def learn_convention(db: Database, *, root: Path, statement: str, origin: ConventionOrigin, source: str | None = None,
                     sha256: str | None = None, evidence: Sequence[EvidenceRef] = (),
                     toolchain: Toolchain | None = None) -> MemoryEntry:
    """A convention: ``origin`` ``instruction-file`` (``source`` is the approved file, ``sha256`` its approved
    content; a change to the file makes the entry inapplicable) or ``review`` (a person's review outcome; no file)."""
    if (origin is ConventionOrigin.INSTRUCTION_FILE) != (source is not None):
        raise InvalidValueError(kind="convention source", reason="an instruction file's convention names its file")
    body: dict[str, object] = {"statement": statement, "origin": origin.value}
    if source is not None:
        body.update(source=source, sha256=sha256 or "")
    refs = [*evidence, *([EvidenceRef(kind=EvidenceKind.INSTRUCTION_FILE, ref=source)] if source else [])]
    return learn(db, root=root, kind=MemoryKind.CONVENTION, text=f"convention: {statement}", body=body,
                 sources=[] if source is None else [source], evidence=refs, toolchain=toolchain)
