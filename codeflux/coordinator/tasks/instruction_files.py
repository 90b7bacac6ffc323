"""Repository instruction files: the configured paths, a person's approvals, and what the model may see.

* **Configured paths** — the setting ``instruction-files`` (``{"paths": [...]}``), else
  :data:`~codeflux.domain.instructions.DEFAULT_INSTRUCTION_PATHS`.
* **Listing** — every configured path found in the repository's checkout
  (:func:`~codeflux.gitwork.instruction_files.read_instruction_files`: no link out of the repository, a size
  bound, not-UTF-8 reported as such) with its sha256 and whether a person approved exactly that content.
* **Approve / revoke** — a person's decision (never the headless policy's, never codeflux's) bound to
  ``(repository id, path, sha256)``; approving is refused unless the checkout's file has exactly that sha256
  now (the person approves what they read). The row, its ``instruction-file-approved`` /
  ``instruction-file-revoked`` event (system session) commit in one transaction.
* **What the model sees** — :class:`InstructionApprovals` answers, for content read from a commit view or a
  task worktree, whether it is approved at exactly that sha256, builds the context block of approved files
  and the label a read tool's result carries. A file whose content changed since its approval is not sent.
* **Memory** — an approval's statements become ``convention`` entries after it commits; a revocation quarantines
  them in its own transaction (:mod:`~codeflux.coordinator.tasks.conventions`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.coordinator.journal import SYSTEM_SESSION_ID
from codeflux.coordinator.tasks.conventions import learn_instruction_conventions, quarantine_instruction_conventions
from codeflux.coordinator.tasks.learning import Learned
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.events import InstructionFileApproved, InstructionFileRevoked
from codeflux.domain.ids import RepositoryId
from codeflux.domain.instructions import (
    DEFAULT_INSTRUCTION_PATHS,
    ApprovalState,
    InstructionFile,
    approved_instruction_label,
    approved_instructions_block,
    is_instruction_path,
    parse_instruction_path,
    parse_instruction_paths,
    parse_sha256,
    unapproved_instruction_label,
)
from codeflux.domain.tools import ToolName
from codeflux.gitwork.instruction_files import read_instruction_file, read_instruction_files
from codeflux.gitwork.repository import RepositorySnapshot
from codeflux.store.database import Database, ReadView, Transaction, now_us
from codeflux.store.events import append_event
from codeflux.store.instruction_approvals import (
    InstructionApprovalRow,
    approval_in_force,
    approvals_of_repository,
    insert_instruction_approval,
    insert_instruction_revocation,
)
from codeflux.store.repositories import RepositoryRow, repository_by_identity
from codeflux.store.settings import put_setting, read_setting

__all__ = [
    "INSTRUCTION_PATHS_SETTING",
    "ApprovedInstructionFile",
    "InstructionApprovalRow",
    "InstructionApprovals",
    "ListedInstructionFile",
    "RepositoryInstructions",
    "approve_instruction_file",
    "configured_instruction_paths",
    "list_instruction_files",
    "revoke_instruction_file",
    "set_instruction_paths",
]

INSTRUCTION_PATHS_SETTING: Final = "instruction-files"
_PERSON: Final = "user"
_GREP_PATH_END: Final = ":"


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedInstructionFile:
    """A file as found, its state, the approval in force for its current content (if any), and every
    approval of that path (newest last, revoked ones too)."""

    file: InstructionFile
    state: ApprovalState
    approval: InstructionApprovalRow | None
    history: tuple[InstructionApprovalRow, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RepositoryInstructions:
    root: Path
    repository_id: RepositoryId | None
    paths: tuple[str, ...]
    files: tuple[ListedInstructionFile, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Paths:
    paths: tuple[str, ...]
    revision: int | None


def _read_paths(view: ReadView) -> _Paths:
    row = read_setting(view, INSTRUCTION_PATHS_SETTING)
    if row is None:
        return _Paths(paths=DEFAULT_INSTRUCTION_PATHS, revision=None)
    raw = row.value.get("paths")
    listed = [str(path) for path in raw] if isinstance(raw, list) else []
    return _Paths(paths=parse_instruction_paths(listed), revision=row.revision)


def configured_instruction_paths(db: Database) -> tuple[str, ...]:
    """The repository-relative paths that are instruction files (the setting, else the defaults)."""
    return db.read(_read_paths).paths


def set_instruction_paths(db: Database, paths: Sequence[str]) -> tuple[str, ...]:
    """Replace the configured paths (each checked; an empty list restores the defaults)."""
    chosen = parse_instruction_paths(paths) or DEFAULT_INSTRUCTION_PATHS

    def work(tx: Transaction) -> None:
        current = _read_paths(tx)
        put_setting(tx, INSTRUCTION_PATHS_SETTING, {"paths": list(chosen)}, expected_revision=current.revision)

    db.write(work)
    return chosen


def _state_of(file: InstructionFile,
              history: Sequence[InstructionApprovalRow]) -> tuple[ApprovalState, InstructionApprovalRow | None]:
    in_force = [row for row in history if row.in_force]
    current = next((row for row in reversed(in_force) if row.sha256 == file.sha256), None)
    if current is not None and file.approvable:
        return ApprovalState.APPROVED, current
    if in_force:
        return ApprovalState.CHANGED, None
    return ApprovalState.UNAPPROVED, None


def list_instruction_files(db: Database, snapshot: RepositorySnapshot) -> RepositoryInstructions:
    """The configured instruction files in ``snapshot``'s checkout with their approval state."""
    paths = configured_instruction_paths(db)
    known = db.read(lambda view: repository_by_identity(view, snapshot.identity))
    history = [] if known is None else db.read(lambda view: approvals_of_repository(view, known.repository_id))
    listed = []
    for file in read_instruction_files(snapshot.root, paths):
        of_path = [row for row in history if row.path == file.path]
        state, approval = _state_of(file, of_path)
        listed.append(ListedInstructionFile(file=file, state=state, approval=approval, history=tuple(of_path)))
    return RepositoryInstructions(root=snapshot.root, repository_id=None if known is None else known.repository_id,
                                  paths=paths, files=tuple(listed))


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovedInstructionFile:
    """The approval in force, and what memory learned from it (nothing when it was approved already)."""

    row: InstructionApprovalRow
    learned: Learned


def approve_instruction_file(
    db: Database, snapshot: RepositorySnapshot, *, path: str, sha256: str,
    register: Callable[[RepositorySnapshot], RepositoryRow], clock: Callable[[], int] = now_us,
) -> ApprovedInstructionFile:  # fmt: skip
    """Record the person's approval of ``path`` at ``sha256`` in the repository ``snapshot`` shows, then let
    memory learn the file's statements as conventions (after the commit; what it could not learn is in ``learned``).

    The path must be configured and the checkout's file must hold exactly ``sha256`` now, as UTF-8 text within
    the size bound; else :class:`InvalidValueError`. ``register`` records the repository the first time.
    Approving content already approved returns that approval (nothing new is recorded).
    """
    chosen_path, digest = parse_instruction_path(path), parse_sha256(sha256)
    if chosen_path not in configured_instruction_paths(db):
        raise InvalidValueError(kind="instruction file", reason="that path is not a configured instruction file")
    file = read_instruction_file(snapshot.root, chosen_path)
    if file.problem is not None:
        raise InvalidValueError(kind="instruction file", reason=f"it cannot be approved: {file.problem}")
    if file.sha256 != digest:
        raise InvalidValueError(kind="instruction file approval",
                                reason="the file's content is not the sha256 given; list it again and read it")
    repository = register(snapshot)

    def work(tx: Transaction) -> tuple[InstructionApprovalRow, bool]:
        existing = approval_in_force(tx, repository.repository_id, chosen_path, digest)
        if existing is not None:
            return existing, False
        row = insert_instruction_approval(tx, repository_id=repository.repository_id, path=chosen_path,
                                          sha256=digest, approved_by=_PERSON, at_us=clock())
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=InstructionFileApproved(
            repository_id=repository.repository_id, path=chosen_path, sha256=digest, by=_PERSON))
        return row, True

    row, recorded = db.write(work)
    if not recorded:
        return ApprovedInstructionFile(row=row, learned=Learned())
    return ApprovedInstructionFile(row=row, learned=learn_instruction_conventions(
        db, snapshot.root, path=chosen_path, sha256=digest, approval_id=f"instruction-approval-{row.approval_id}"))


def revoke_instruction_file(db: Database, snapshot: RepositorySnapshot, *, path: str, sha256: str,
                            clock: Callable[[], int] = now_us) -> InstructionApprovalRow | None:
    """Revoke the approval in force of ``path`` at ``sha256`` (the file may have changed or gone since);
    returns it, or None when no approval of exactly that was in force (nothing is recorded then)."""
    chosen_path, digest = parse_instruction_path(path), parse_sha256(sha256)
    known = db.read(lambda view: repository_by_identity(view, snapshot.identity))
    if known is None:
        return None
    repository_id = known.repository_id

    def work(tx: Transaction) -> InstructionApprovalRow | None:
        existing = approval_in_force(tx, repository_id, chosen_path, digest)
        if existing is None:
            return None
        at_us = clock()
        insert_instruction_revocation(tx, approval_id=existing.approval_id, revoked_by=_PERSON, at_us=at_us)
        quarantine_instruction_conventions(tx, root_commits=snapshot.root_commits, path=chosen_path, sha256=digest,
                                           at_us=at_us)
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=InstructionFileRevoked(
            repository_id=repository_id, path=chosen_path, sha256=digest, by=_PERSON))
        return existing

    return db.write(work)


class InstructionApprovals:
    """What the model may be shown of one repository's instruction files, read from ``root`` (a commit view
    or a task worktree): approved files as instructions, everything else labelled as mere repository text.

    Approvals are read from the database at each question, so a revocation takes effect at the next one.
    """

    def __init__(self, db: Database, *, repository_id: RepositoryId | None, root: Path,
                 paths: tuple[str, ...] | None = None) -> None:
        self._db, self._repository_id, self._root = db, repository_id, root
        self._paths = configured_instruction_paths(db) if paths is None else paths

    @property
    def paths(self) -> tuple[str, ...]:
        return self._paths

    def is_instruction_file(self, path: str) -> bool:
        return is_instruction_path(path, self._paths)

    def is_approved(self, path: str, sha256: str | None) -> bool:
        """Whether a person approved ``path`` at exactly ``sha256`` in this repository (and has not revoked it)."""
        if self._repository_id is None or not sha256:
            return False
        repository_id = self._repository_id
        return self._db.read(lambda view: approval_in_force(view, repository_id, path, sha256)) is not None

    def approved_files(self) -> list[InstructionFile]:
        """The configured files under ``root`` whose exact content is approved (unapproved or changed: left out)."""
        return [file for file in read_instruction_files(self._root, self._paths)
                if file.approvable and self.is_approved(file.path, file.sha256)]

    def approved_texts(self) -> list[tuple[str, str, str]]:
        """``(path, sha256, text)`` of each approved file under ``root``."""
        return [(file.path, file.sha256 or "", file.text or "") for file in self.approved_files()]

    def context_block(self) -> str | None:
        """The block of approved instruction files for the model's context (None when there is none)."""
        return approved_instructions_block(self.approved_texts())

    def label_read(self, path: str, sha256: str | None) -> str:
        """The label for a ``read_file`` result of ``path`` whose whole content hashes to ``sha256``: empty for a
        file that is not an instruction file."""
        path = posixpath.normpath(path)  # "./AGENTS.md" is AGENTS.md; the sha256 is of the file the tool read
        if not self.is_instruction_file(path):
            return ""
        if self.is_approved(path, sha256):
            return approved_instruction_label(path, sha256 or "")
        return unapproved_instruction_label([path])

    def label_result(self, tool: str, arguments: Mapping[str, object], *, content: str,
                     content_sha256: str | None) -> str:
        """The label a successful reading tool's result carries: ``read_file`` of an instruction file (by the
        whole file's sha256, as the tool reported it), ``grep`` lines quoting instruction files; else empty."""
        if tool == ToolName.READ_FILE.value:
            path = arguments.get("path")
            return self.label_read(path, content_sha256) if isinstance(path, str) else ""
        if tool == ToolName.GREP.value:
            quoted = {line.split(_GREP_PATH_END, 1)[0] for line in content.splitlines()
                      if _GREP_PATH_END in line and not line.startswith("[codeflux")}
            return self.label_paths(quoted)
        return ""

    def label_paths(self, paths: Iterable[str]) -> str:
        """The label for a result quoting several files (``grep``): each instruction file among ``paths``, approved
        or not, by reading its current bytes under ``root``."""
        approved: list[tuple[str, str]] = []
        unapproved: list[tuple[str, str]] = []
        for path in sorted(set(paths)):
            if not self.is_instruction_file(path):
                continue
            file = read_instruction_file(self._root, path)
            digest = file.sha256 if file.approvable else None
            (approved if self.is_approved(path, digest) else unapproved).append((path, digest or ""))
        labels = [approved_instruction_label(path, digest) for path, digest in approved]
        if unapproved:
            labels.append(unapproved_instruction_label([path for path, _ in unapproved]))
        return "".join(labels)

