"""The worker's startup configuration: one JSON line on stdin, never argv, never the environment.

The token must not appear where other processes can read it (``/proc/<pid>/cmdline`` and ``environ``
are readable by the same user), so the coordinator writes it to the worker's stdin. The line is bounded
(64 KiB), must hold exactly the known fields, and every field is validated before anything is served.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId, WorkerLeaseId

__all__ = ["MAX_SOCKET_PATH_BYTES", "STARTUP_PROTOCOL", "BoxRequest", "StartupConfig", "read_startup_config"]

STARTUP_PROTOCOL: Final = 2
MAX_SOCKET_PATH_BYTES: Final = 104  # sun_path holds 108 bytes on Linux, 104 on the BSDs; keep the smaller
_MAX_LINE: Final = 64 * 1024
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,255}")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_FIELDS: Final = frozenset({"protocol", "socket_path", "lease_id", "lease_token", "worktree", "task_id",
                            "lease_interval_ms", "base_commit", "confinement"})
_BOX_FIELDS: Final = frozenset({"mode", "bubblewrap", "hidden", "readonly", "git_common_dir", "git_admin_dir",
                                 "tools", "worktree_readonly"})
_KIND: Final = "worker startup configuration"


@dataclass(frozen=True, slots=True, kw_only=True)
class StartupConfig:
    """Everything a worker needs to serve one lease."""

    socket_path: Path
    lease_id: WorkerLeaseId
    lease_token: str
    worktree: Path
    task_id: TaskId
    lease_interval_ms: int
    base_commit: str | None
    box: BoxRequest

    def __repr__(self) -> str:  # the token never reaches a log or a traceback
        return f"StartupConfig(lease_id={self.lease_id}, task_id={self.task_id}, worktree={self.worktree!s})"


def read_startup_config(stream: BinaryIO) -> StartupConfig:
    """Read and validate exactly one line; :class:`InvalidValueError` for anything off."""
    line = stream.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE or not line.endswith(b"\n"):
        raise InvalidValueError(kind=_KIND, reason="expected one JSON line of at most 64 KiB on stdin")
    try:
        document = json.loads(line)
    except ValueError:
        raise InvalidValueError(kind=_KIND, reason="not valid JSON") from None
    if not isinstance(document, dict) or set(document) != _FIELDS:
        raise InvalidValueError(kind=_KIND, reason=f"expected exactly the fields {sorted(_FIELDS)}")
    if document["protocol"] != STARTUP_PROTOCOL:
        raise InvalidValueError(kind=_KIND, reason=f"unsupported protocol (this worker speaks {STARTUP_PROTOCOL})")
    token = _text(document, "lease_token")
    if _TOKEN.fullmatch(token) is None:
        raise InvalidValueError(kind=_KIND, reason="lease_token must be 32-255 characters of [A-Za-z0-9_-]")
    base_commit = document["base_commit"]
    if base_commit is not None and (not isinstance(base_commit, str) or _COMMIT.fullmatch(base_commit) is None):
        raise InvalidValueError(kind=_KIND, reason="base_commit must be a full lowercase commit id or null")
    interval = document["lease_interval_ms"]
    if type(interval) is not int or not 100 <= interval <= 60_000:
        raise InvalidValueError(kind=_KIND, reason="lease_interval_ms must be an integer in 100..60000")
    return StartupConfig(
        socket_path=_socket_path(_text(document, "socket_path")),
        lease_id=WorkerLeaseId.parse(_text(document, "lease_id")),
        lease_token=token,
        worktree=_absolute(_text(document, "worktree"), "worktree"),
        task_id=TaskId.parse(_text(document, "task_id")),
        lease_interval_ms=interval,
        base_commit=base_commit,
        box=_box(document["confinement"]),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BoxRequest:
    """The box the coordinator chose for this worker's processes, and the paths it computed for it.

    The worker checks the mode is really available before it serves (no silent downgrade) and builds
    its :class:`~codeflux.worker.confinement.Confinement` from these facts, never from worktree files.
    """

    mode: ConfinementMode
    bubblewrap: str | None
    hidden: tuple[Path, ...]
    readonly: tuple[Path, ...]
    git_common_dir: Path | None
    git_admin_dir: Path | None
    tools: Path | None = None
    """codeflux's check-tool overlays (``<data>/tools``), shown read-only inside the hidden data directory."""
    worktree_readonly: bool = False
    """The worktree is shown read-only (a watch's scratch copy of a commit): only HOME and TMPDIR are writable."""


def _box(document: object) -> BoxRequest:
    if not isinstance(document, dict) or set(document) != _BOX_FIELDS:
        raise InvalidValueError(kind=_KIND, reason=f"confinement must hold exactly {sorted(_BOX_FIELDS)}")
    try:
        mode = ConfinementMode(document["mode"])
    except ValueError:
        raise InvalidValueError(kind=_KIND, reason="confinement.mode must be bubblewrap, landlock or none") from None
    bubblewrap = _maybe_absolute(document, "bubblewrap")
    if (mode is ConfinementMode.BUBBLEWRAP) != (bubblewrap is not None):
        raise InvalidValueError(kind=_KIND, reason="confinement.bubblewrap is the bwrap path, set exactly in that mode")
    common, admin = _maybe_absolute(document, "git_common_dir"), _maybe_absolute(document, "git_admin_dir")
    if admin is not None and (common is None or common / "worktrees" not in admin.parents):
        raise InvalidValueError(kind=_KIND, reason="confinement.git_admin_dir must lie in git_common_dir/worktrees")
    return BoxRequest(mode=mode, bubblewrap=None if bubblewrap is None else str(bubblewrap),
                      hidden=_absolute_list(document, "hidden"), readonly=_absolute_list(document, "readonly"),
                      git_common_dir=common, git_admin_dir=admin, tools=_maybe_absolute(document, "tools"),
                      worktree_readonly=_flag(document, "worktree_readonly"))


def _flag(document: dict[str, object], name: str) -> bool:
    value = document[name]
    if not isinstance(value, bool):
        raise InvalidValueError(kind=_KIND, reason=f"confinement.{name} must be true or false")
    return value


def _maybe_absolute(document: dict[str, object], name: str) -> Path | None:
    value = document[name]
    if value is None:
        return None
    if not isinstance(value, str) or "\x00" in value:
        raise InvalidValueError(kind=_KIND, reason=f"confinement.{name} must be text without NUL bytes or null")
    return _absolute(value, f"confinement.{name}")


def _absolute_list(document: dict[str, object], name: str) -> tuple[Path, ...]:
    values = document[name]
    if not isinstance(values, list) or len(values) > 64:
        raise InvalidValueError(kind=_KIND, reason=f"confinement.{name} must be a list of at most 64 paths")
    found = []
    for value in values:
        if not isinstance(value, str) or "\x00" in value:
            raise InvalidValueError(kind=_KIND, reason=f"confinement.{name} must hold text without NUL bytes")
        found.append(_absolute(value, f"confinement.{name}"))
    return tuple(found)


def _text(document: dict[str, object], name: str) -> str:
    value = document[name]
    if not isinstance(value, str) or "\x00" in value:
        raise InvalidValueError(kind=_KIND, reason=f"{name} must be text without NUL bytes")
    return value


def _absolute(value: str, name: str) -> Path:
    path = Path(value)
    if not path.is_absolute():
        raise InvalidValueError(kind=_KIND, reason=f"{name} must be an absolute path")
    return path


def _socket_path(value: str) -> Path:
    path = _absolute(value, "socket_path")
    if len(value.encode("utf-8")) > MAX_SOCKET_PATH_BYTES:
        raise InvalidValueError(kind=_KIND, reason=f"socket_path is over {MAX_SOCKET_PATH_BYTES} bytes")
    return path
