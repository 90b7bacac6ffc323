"""Landing a commit on the user's checkout path by path, under git's own locks, durably.

The order (docs/storage.md, "Accept: intent, landing, recovery"):

1. take ``index.lock`` (the checkout's git directory) and ``refs/heads/<branch>.lock`` (the common git
   directory) with ``O_CREAT|O_EXCL`` the way git does; a lock another process holds is waited for
   (:data:`LOCK_WAIT_SECONDS`, polling) and then reported as :class:`~codeflux.domain.errors.GitLockHeldError`.
   The locks codeflux creates stay empty for their whole life (new content goes through temporary files),
   which is how recovery tells its own stale locks from another program's;
2. every planned path gets its new content in a temporary file beside it (``.<name>.codeflux-<token>``),
   fsynced, then renamed into place (deletions unlink; folders are created and emptied ones removed), so a
   path is always either its old or its new content, never a part of either;
3. the new index is written to ``codeflux-landing-<token>.index`` in the git directory, fsynced and renamed
   to ``index``;
4. the branch's new target is written to ``codeflux-landing-<token>.ref``, fsynced and renamed over the
   loose ref; the reflog lines git would write are appended — the ref move is the commit point;
5. the locks are released (only the ones created here) and the temporary files removed on every path.

:func:`resolve_interrupted` is what a retry and startup recovery do with a landing that did not finish: the
ref moved → finished (clean up); the ref did not move → roll back every path holding the new content to
its old content (and the index when it was replaced); a path holding neither is refused by name.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import pygit2

from codeflux.domain.errors import GitLockHeldError, GitOperationFailedError, LandingChangedSinceError
from codeflux.gitwork.checkout import map_git_errors

__all__ = [
    "LOCK_WAIT_SECONDS",
    "LandingFault",
    "LandingPlan",
    "LandingResolution",
    "PlannedPath",
    "enable_git_fsync",
    "land",
    "plan_paths",
    "resolve_interrupted",
]

LOCK_WAIT_SECONDS = 10.0
_POLL_SECONDS = 0.05
_GITLINK = 0o160000
_SYMLINK = 0o120000
_EXECUTABLE = 0o100755


class LandingFault(StrEnum):
    """Named points of a landing where tests inject a failure (``fault`` of :func:`land`)."""

    LOCKED = "locked"  # both locks held; nothing written
    PATH_WRITTEN = "path-written"  # the first planned path holds its new content
    FILES_WRITTEN = "files-written"  # every path new; index and ref old
    INDEX_WRITTEN = "index-written"  # files and index new; ref old
    REF_MOVED = "ref-moved"  # the branch moved; locks and temporary files not yet cleaned up


class LandingResolution(StrEnum):
    """What :func:`resolve_interrupted` found and did."""

    FINISHED = "finished"  # the branch had moved: the landing was complete; only leftovers were removed
    ROLLED_BACK = "rolled-back"  # the branch had not moved: every path is back to its old content


def enable_git_fsync() -> None:
    """Make libgit2 fsync what it writes under .git (objects, refs, index) in this process."""
    pygit2.option(pygit2.enums.Option.ENABLE_FSYNC_GITDIR, 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedPath:
    """One path the landing changes: its blob id and mode before and after (None: absent)."""

    path: str
    old_id: str | None
    old_mode: int | None
    new_id: str | None
    new_mode: int | None

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "old_id": self.old_id, "old_mode": self.old_mode, "new_id": self.new_id,
                "new_mode": self.new_mode}

    @classmethod
    def from_json(cls, value: dict[str, object]) -> PlannedPath:
        def text(key: str) -> str | None:
            found = value.get(key)
            return None if found is None else str(found)

        def number(key: str) -> int | None:
            found = value.get(key)
            return None if found is None else int(str(found))

        return cls(path=str(value["path"]), old_id=text("old_id"), old_mode=number("old_mode"),
                   new_id=text("new_id"), new_mode=number("new_mode"))


@dataclass(frozen=True, slots=True, kw_only=True)
class LandingPlan:
    """Everything a landing will do, recorded before it starts (the accept intent holds exactly this)."""

    work_tree: Path
    git_dir: Path  # the checkout's own git directory: index, HEAD, logs/HEAD
    common_dir: Path  # refs and their logs
    branch_ref: str
    previous_head: str
    previous_tree: str
    landed_head: str
    landed_tree: str
    paths: tuple[PlannedPath, ...]
    token: str  # names the temporary files of this landing

    @property
    def index_lock(self) -> Path:
        return self.git_dir / "index.lock"

    @property
    def ref_lock(self) -> Path:
        return self.common_dir / f"{self.branch_ref}.lock"

    @property
    def locks(self) -> tuple[Path, ...]:
        return self.index_lock, self.ref_lock

    def with_token(self, token: str) -> LandingPlan:
        return LandingPlan(work_tree=self.work_tree, git_dir=self.git_dir, common_dir=self.common_dir,
                           branch_ref=self.branch_ref, previous_head=self.previous_head,
                           previous_tree=self.previous_tree, landed_head=self.landed_head,
                           landed_tree=self.landed_tree, paths=self.paths, token=token)

    def paths_json(self) -> str:
        return json.dumps([p.to_json() for p in self.paths], sort_keys=True)

    def temp_of(self, relative: str) -> Path:
        target = self.work_tree / relative
        return target.parent / f".{target.name}.codeflux-{self.token}"

    @property
    def index_temp(self) -> Path:
        return self.git_dir / f"codeflux-landing-{self.token}.index"

    @property
    def ref_temp(self) -> Path:
        return self.common_dir / f"codeflux-landing-{self.token}.ref"

    def leftovers(self) -> tuple[Path, ...]:
        """Every temporary file this landing may have left (removing them is always safe)."""
        index = self.index_temp
        return (*(self.temp_of(p.path) for p in self.paths), index, index.with_name(index.name + ".lock"),
                self.ref_temp)


def plan_paths(repository: pygit2.Repository, old_tree: pygit2.Oid, new_tree: pygit2.Oid) -> tuple[PlannedPath, ...]:
    """The paths that differ between the two trees, with blob ids and modes on each side."""
    with map_git_errors("plan the landing"):
        old = repository[old_tree].peel(pygit2.Tree)
        new = repository[new_tree].peel(pygit2.Tree)
        deltas = old.diff_to_tree(new).deltas
        planned = []
        for delta in deltas:
            before, after = delta.old_file, delta.new_file
            absent_before = before.id == pygit2.Oid(hex="0" * 40) or before.mode == 0
            absent_after = after.id == pygit2.Oid(hex="0" * 40) or after.mode == 0
            planned.append(PlannedPath(
                path=after.path if not absent_after else before.path,
                old_id=None if absent_before else str(before.id), old_mode=None if absent_before else int(before.mode),
                new_id=None if absent_after else str(after.id), new_mode=None if absent_after else int(after.mode)))
    return tuple(sorted(planned, key=lambda p: p.path))


# ─── locks ───────────────────────────────────────────────────────────────────────────────────────────


def _shown(plan: LandingPlan, lock: Path) -> str:
    try:
        return str(lock.relative_to(plan.work_tree))
    except ValueError:
        return str(lock)


@dataclass(slots=True)
class _Held:
    path: Path
    device: int
    inode: int


def _take_lock(plan: LandingPlan, lock: Path, deadline: float) -> _Held:
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            descriptor = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            if time.monotonic() >= deadline:
                raise GitLockHeldError(lock=_shown(plan, lock), waited_seconds=int(LOCK_WAIT_SECONDS)) from None
            time.sleep(_POLL_SECONDS)
            continue
        try:
            info = os.fstat(descriptor)
        finally:
            os.close(descriptor)
        return _Held(path=lock, device=info.st_dev, inode=info.st_ino)


def _release(held: _Held) -> None:
    """Remove the lock file only while it still is the one created here."""
    with contextlib.suppress(OSError):
        info = os.lstat(held.path)
        if (info.st_dev, info.st_ino) == (held.device, held.inode):
            os.unlink(held.path)


@contextlib.contextmanager
def _locked(plan: LandingPlan) -> Iterator[None]:
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    held: list[_Held] = []
    try:
        for lock in plan.locks:
            held.append(_take_lock(plan, lock, deadline))
        yield
    finally:
        for taken in reversed(held):
            _release(taken)
        _fsync_dirs({taken.path.parent for taken in held})


def remove_own_stale_lock(lock: Path, *, started_at_ns: int, allowed: tuple[bytes, ...] = (b"",)) -> bool:
    """Remove a lock a killed landing left: only when its content is one codeflux writes (empty for the
    checkout's index and branch locks) and it was created after the landing started. True when removed."""
    try:
        info = os.lstat(lock)
        if not stat.S_ISREG(info.st_mode) or info.st_mtime_ns < started_at_ns or info.st_size > 200:
            return False
        if lock.read_bytes() not in allowed:
            return False
        os.unlink(lock)
    except OSError:
        return False
    return True


# ─── durable writes ──────────────────────────────────────────────────────────────────────────────────


def _fsync_path(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _fsync_dirs(directories: set[Path]) -> None:
    for directory in sorted(directories):
        with contextlib.suppress(FileNotFoundError):
            _fsync_path(directory)


def _write_durably(target: Path, temp: Path, data: bytes, mode: int = 0o644) -> None:
    """``data`` into ``temp`` (fsynced, mode set) then renamed to ``target``: target is old or new, never half."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        view = memoryview(data)
        while view:
            written = os.write(descriptor, view)
            view = view[written:]
        os.fchmod(descriptor, mode)
        os.fsync(descriptor)
    except BaseException:
        os.close(descriptor)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    os.close(descriptor)
    os.replace(temp, target)


def _checked_out_bytes(repository: pygit2.Repository, blob_id: str, relative: str) -> bytes:
    """The blob's content as git checks it out at ``relative`` (its filters applied, e.g. line endings)."""
    blob = repository[pygit2.Oid(hex=blob_id)].peel(pygit2.Blob)
    with pygit2.BlobIO(blob, as_path=relative) as reader:
        return reader.read()


def _user_mode(mode: int) -> int:
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if mode == _EXECUTABLE else 0o666) & ~umask


def _remove_path(plan: LandingPlan, relative: str, touched: set[Path]) -> None:
    target = plan.work_tree / relative
    with contextlib.suppress(FileNotFoundError):
        if target.is_dir() and not target.is_symlink():
            target.rmdir()  # an emptied submodule folder; a non-empty one stays
        else:
            target.unlink()
    touched.add(target.parent)
    parent = target.parent
    while parent != plan.work_tree:
        try:
            parent.rmdir()
        except OSError:
            break
        touched.add(parent.parent)
        parent = parent.parent


def _make_parents(plan: LandingPlan, target: Path, touched: set[Path]) -> None:
    missing = []
    parent = target.parent
    while not parent.exists() and parent != plan.work_tree:
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        folder.mkdir()
        touched.add(folder.parent)
    touched.add(target.parent)


def _put_path(repository: pygit2.Repository, plan: LandingPlan, relative: str, *, blob_id: str, mode: int,
              touched: set[Path]) -> None:
    target = plan.work_tree / relative
    _make_parents(plan, target, touched)
    if target.is_dir() and not target.is_symlink():
        with contextlib.suppress(OSError):
            target.rmdir()
    if mode == _GITLINK:
        target.mkdir(exist_ok=True)
        return
    temp = plan.temp_of(relative)
    if mode == _SYMLINK:
        link = repository[pygit2.Oid(hex=blob_id)].peel(pygit2.Blob).data
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        os.symlink(link, temp)
        os.replace(temp, target)
        return
    _write_durably(target, temp, _checked_out_bytes(repository, blob_id, relative), _user_mode(mode))


def _apply_side(repository: pygit2.Repository, plan: LandingPlan, paths: tuple[PlannedPath, ...], *, new: bool,
                after_first: Callable[[], None] | None = None) -> None:
    """Give every path in ``paths`` its new (else old) content: deletions first, then writes; fsync folders."""
    touched: set[Path] = set()

    def side(p: PlannedPath) -> tuple[str | None, int | None]:
        return (p.new_id, p.new_mode) if new else (p.old_id, p.old_mode)

    for planned in paths:
        if side(planned)[0] is None:
            _remove_path(plan, planned.path, touched)
    first = True
    for planned in paths:
        blob_id, mode = side(planned)
        if blob_id is not None and mode is not None:
            _put_path(repository, plan, planned.path, blob_id=blob_id, mode=mode, touched=touched)
            if first and after_first is not None:
                after_first()
            first = False
    _fsync_dirs(touched)


def _write_index(repository: pygit2.Repository, plan: LandingPlan, tree: str) -> None:
    """The index of ``tree`` into a temporary file in the git directory, fsynced, renamed to ``index``."""
    temp = plan.index_temp
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    with map_git_errors("write the index"):
        index = pygit2.Index(str(temp))
        index.read_tree(repository[pygit2.Oid(hex=tree)].peel(pygit2.Tree))
        index.write()
    _fsync_path(temp)
    os.replace(temp, plan.git_dir / "index")
    _fsync_path(plan.git_dir)


def _reflog_line(old: str, new: str, committer: pygit2.Signature, message: str) -> bytes:
    offset = committer.offset
    sign = "-" if offset < 0 else "+"
    zone = f"{sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    return f"{old} {new} {committer.name} <{committer.email}> {int(time.time())} {zone}\t{message}\n".encode()


def _append_durably(path: Path, line: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        os.write(descriptor, line)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _move_ref(plan: LandingPlan, committer: pygit2.Signature, message: str) -> None:
    """The branch's new target through a temporary file renamed over the loose ref, then its reflog lines."""
    target = plan.common_dir / plan.branch_ref
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_durably(target, plan.ref_temp, f"{plan.landed_head}\n".encode())
    _fsync_path(target.parent)
    line = _reflog_line(plan.previous_head, plan.landed_head, committer, message)
    _append_durably(plan.common_dir / "logs" / plan.branch_ref, line)
    _append_durably(plan.git_dir / "logs" / "HEAD", line)


def _branch_target(repository: pygit2.Repository, plan: LandingPlan) -> tuple[str | None, str | None]:
    """(what HEAD names, the branch's current target), read fresh from disk."""
    with map_git_errors("read the branch"):
        head = repository.references.get("HEAD")
        named = None if head is None else head.target if isinstance(head.target, str) else None
        ref = repository.references.get(plan.branch_ref)
        target = None if ref is None else str(ref.resolve().target)
    return (None if named is None else str(named)), target


def _remove_leftovers(plan: LandingPlan) -> None:
    for leftover in plan.leftovers():
        with contextlib.suppress(OSError):
            if leftover.is_symlink() or leftover.is_file():
                leftover.unlink()


def land(plan: LandingPlan, *, committer: pygit2.Signature, message: str, first: Callable[[], None] | None = None,
         fault: Callable[[LandingFault], None] | None = None) -> None:
    """Land ``plan`` on the checkout (see the module docstring); raises before changing anything when a
    lock is held or the branch moved; after a failure part-way every path is still old or new. ``first``
    runs once both locks are held, before any path is written (the accept moves the task branch there)."""
    def inject(point: LandingFault) -> None:
        if fault is not None:
            fault(point)

    try:
        with _locked(plan), _opened(plan.git_dir) as repository:
            named, target = _branch_target(repository, plan)
            if named != plan.branch_ref or target != plan.previous_head:
                raise GitOperationFailedError(operation="move the branch", problem="concurrent-update",
                                              detail=f"{plan.branch_ref} moved during the accept")
            if first is not None:
                first()
            inject(LandingFault.LOCKED)
            _apply_side(repository, plan, plan.paths, new=True, after_first=lambda: inject(LandingFault.PATH_WRITTEN))
            inject(LandingFault.FILES_WRITTEN)
            _write_index(repository, plan, plan.landed_tree)
            inject(LandingFault.INDEX_WRITTEN)
            _move_ref(plan, committer, message)
            inject(LandingFault.REF_MOVED)
    except OSError as error:
        raise _os_failure("land the accepted change", error) from error
    finally:
        _remove_leftovers(plan)


def _os_failure(operation: str, error: OSError) -> GitOperationFailedError:
    problem = "disk-full" if error.errno in (errno.ENOSPC, errno.EDQUOT) else "io-error"
    return GitOperationFailedError(operation=operation, problem=problem, detail=str(error))


@contextlib.contextmanager
def _opened(git_dir: Path) -> Iterator[pygit2.Repository]:
    with map_git_errors("open the repository"):
        repository = pygit2.Repository(str(git_dir))
    try:
        yield repository
    finally:
        repository.free()


def _state_of(repository: pygit2.Repository, plan: LandingPlan, planned: PlannedPath) -> str:
    """``old``, ``new`` or ``other``: which side's content the path holds now (content and kind compared)."""
    target = plan.work_tree / planned.path
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        current: str | None = None
    else:
        if stat.S_ISLNK(info.st_mode):
            current = str(pygit2.hash(os.readlink(target).encode()))
        elif stat.S_ISDIR(info.st_mode):
            current = "dir"
        else:
            with map_git_errors("read the checkout"):
                current = str(repository.hashfile(str(target), as_path=planned.path))
    for side, blob_id, mode in (("new", planned.new_id, planned.new_mode), ("old", planned.old_id, planned.old_mode)):
        if mode == _GITLINK and current in ("dir", None):
            return side
        if current == blob_id:
            return side
    return "other"


def resolve_interrupted(plan: LandingPlan, *, started_at_ns: int,
                        extra_locks: tuple[tuple[Path, tuple[bytes, ...]], ...] = ()) -> LandingResolution:
    """Finish or roll back a landing that did not finish (see the module docstring); raises
    :class:`LandingChangedSinceError` naming paths that hold neither side, :class:`GitLockHeldError` when
    another process holds a lock."""
    try:
        for lock in plan.locks:
            remove_own_stale_lock(lock, started_at_ns=started_at_ns)
        for lock, allowed in extra_locks:
            remove_own_stale_lock(lock, started_at_ns=started_at_ns, allowed=allowed)
        _remove_leftovers(plan)
        with _locked(plan), _opened(plan.git_dir) as repository:
            named, target = _branch_target(repository, plan)
            if named == plan.branch_ref and target == plan.landed_head:
                return LandingResolution.FINISHED
            states = {p.path: _state_of(repository, plan, p) for p in plan.paths}
            on_branch = named == plan.branch_ref and target == plan.previous_head
            blocking = [path for path, state in states.items()
                        if state == "other" or (state == "new" and not on_branch)]
            if blocking:
                raise LandingChangedSinceError(paths=tuple(sorted(blocking)), branch=plan.branch_ref)
            back = tuple(p for p in plan.paths if states[p.path] == "new")
            _apply_side(repository, plan, back, new=False)
            if on_branch and _index_tree(repository) == plan.landed_tree:
                _write_index(repository, plan, plan.previous_tree)
            return LandingResolution.ROLLED_BACK
    except OSError as error:
        raise _os_failure("recover the interrupted accept", error) from error
    finally:
        _remove_leftovers(plan)


def _index_tree(repository: pygit2.Repository) -> str | None:
    with map_git_errors("read the index"):
        index = repository.index
        index.read(True)
        if index.conflicts is not None:
            return None
        return str(index.write_tree(repository))
