"""`doctor`: every prerequisite of codeflux, each with a status and, when not ok, a concrete next step.

Statuses: ``ok``; ``missing`` (not set up yet, nothing broken); ``degraded`` (works, but poorly or
needs an action soon); ``failed`` (present and broken); ``unknown`` (the check itself could not run —
never coerced into ok). A check blocks work when it is failed or unknown, or missing where the
prerequisite is required. Doctor never creates the data directory or the database and never contacts
a model provider.
"""

from __future__ import annotations

import concurrent.futures
import enum
import errno
import functools
import os
import platform
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import apsw

from codeflux.coordinator.instance import running_coordinator
from codeflux.coordinator.provider_keys import key_origins, process_keys
from codeflux.coordinator.user_config import config_path, load_user_config
from codeflux.credentials import KeySource, probe_credential_store, stored_provider_keys
from codeflux.domain.confinement import ConfinementMode
from codeflux.domain.errors import CodefluxError, ConfinementUnavailableError, InvalidValueError, StoreCorruptError
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TERMINAL_TASK_STATES, TaskState
from codeflux.domain.user_config import PROXY_FROM_ENVIRONMENT
from codeflux.store.accept_landings import unfinished_landings
from codeflux.store.connection import open_connection
from codeflux.store.database import ReadView
from codeflux.store.inspection import readonly_database
from codeflux.store.location import DataLocation
from codeflux.store.migrations import read_schema_version, supported_schema_version
from codeflux.store.task_records import TaskRecord, tasks_in_states
from codeflux.store.wal_damage import check_wal_before_open, recorded_store_damage, store_damage_of_task
from codeflux.worker.client.confinement import CONFINEMENT_VARIABLE, choose_confinement

__all__ = [
    "DEFAULT_PORT",
    "CheckResult",
    "CheckStatus",
    "DoctorReport",
    "run_doctor",
]

DEFAULT_PORT = 47311
MIN_FREE_BYTES = 512 * 1024 * 1024
CHECK_TIMEOUT_S = 8.0
_TASKS_SCHEMA_VERSION = 4  # the migration that added tasks with their states
_LANDINGS_SCHEMA_VERSION = 10  # the migration that added the accept journal
MIN_SQLITE = (3, 37, 0)  # STRICT tables
T = TypeVar("T")
_OPEN_STATES = [state for state in TaskState if state not in TERMINAL_TASK_STATES]


class CheckStatus(enum.StrEnum):
    OK = "ok"
    MISSING = "missing"
    DEGRADED = "degraded"
    FAILED = "failed"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    id: str
    title: str
    status: CheckStatus
    summary: str
    remediation: str | None = None
    required: bool = True

    def __post_init__(self) -> None:
        if self.status is not CheckStatus.OK and not self.remediation:
            raise ValueError(f"doctor check {self.id} is {self.status} without a next step")

    @property
    def blocks(self) -> bool:
        if self.status in (CheckStatus.FAILED, CheckStatus.UNKNOWN):
            return True
        return self.status is CheckStatus.MISSING and self.required


@dataclass(frozen=True, slots=True, kw_only=True)
class DoctorReport:
    checks: tuple[CheckResult, ...]

    @property
    def blocking(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if c.blocks)


def run_doctor(location: DataLocation, *, port: int = DEFAULT_PORT,
               extra_checks: Sequence[Callable[[DataLocation], CheckResult]] = ()) -> DoctorReport:
    """Every check, in order, each bounded in time; ``extra_checks`` (checks of a higher floor, such as
    :func:`codeflux.coordinator.tasks.leftovers.check_leftovers`) run last."""
    checks: list[Callable[[], CheckResult]] = [
        _check_python_and_sqlite,
        _check_git,
        _check_confinement,
        lambda: _check_data_directory(location),
        lambda: _check_write_ahead_log(location),  # before anything opens the database (opening discards it)
        lambda: _check_database(location),
        _check_credential_store,
        lambda: _check_provider_credentials(location),
        lambda: _check_worktree_space(location),
        lambda: _check_loopback_port(location, port),
        lambda: _check_tasks_needing_recovery(location),
        lambda: _check_unfinished_accepts(location),
        _check_config_file,
    ]
    checks += [functools.partial(check, location) for check in extra_checks]
    return DoctorReport(checks=tuple(_run_bounded(check) for check in checks))


def _check_config_file() -> CheckResult:
    """Where the config file is (:mod:`codeflux.coordinator.user_config`) and what it sets; an invalid one blocks
    (``start`` and ``run`` would refuse it)."""
    title, path = "config file", config_path(os.environ)
    try:
        config = load_user_config(os.environ)
    except InvalidValueError as error:
        return CheckResult(id="config-file", title=title, status=CheckStatus.FAILED, summary=str(error),
                           remediation=f"fix or remove {path} (docs/using.md, \"Config file\")")
    if not path.exists():
        return CheckResult(id="config-file", title=title, status=CheckStatus.OK,
                           summary=f"none at {path} (optional: defaults such as the provider)")
    provider, network = config.provider, config.network
    what = "sets no provider" if provider is None else f"provider {provider.name}" + (
        f" ({provider.cheap_model})" if provider.cheap_model else "")
    if network is not None and network.proxy:
        what += "; provider calls through " + ("the environment's proxy (HTTPS_PROXY, NO_PROXY)"
                                               if network.proxy == PROXY_FROM_ENVIRONMENT else network.proxy)
    if network is not None and network.ca_bundle:
        readable = os.access(network.ca_bundle, os.R_OK)
        what += f"; extra CA certificates from {network.ca_bundle}" + ("" if readable else " (cannot be read)")
        if not readable:
            return CheckResult(id="config-file", title=title, status=CheckStatus.FAILED, summary=f"{path}: {what}",
                               remediation=f"make {network.ca_bundle} readable or remove [network] ca_bundle")
    return CheckResult(id="config-file", title=title, status=CheckStatus.OK, summary=f"{path}: {what}")


def _run_bounded(check: Callable[[], CheckResult]) -> CheckResult:
    """Run one check in a thread with a timeout, so a hung D-Bus or disk can't hang doctor."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(check).result(timeout=CHECK_TIMEOUT_S)
    except concurrent.futures.TimeoutError:
        name = getattr(check, "__name__", "check").removeprefix("_check_").replace("_", "-")
        return CheckResult(id=name, title=name, status=CheckStatus.UNKNOWN,
                           summary=f"did not finish within {CHECK_TIMEOUT_S:.0f} s",
                           remediation="run `codeflux doctor` again; if it repeats, that component is hung")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _check_python_and_sqlite() -> CheckResult:
    version = apsw.sqlite_lib_version()
    parts = tuple(int(p) for p in version.split(".")[:3])
    summary = f"Python {platform.python_version()}, SQLite {version} (apsw {apsw.apsw_version()})"
    if parts < MIN_SQLITE:
        return CheckResult(id="python-sqlite", title="Python and SQLite", status=CheckStatus.FAILED,
                           summary=f"{summary}; SQLite 3.37 or newer is needed",
                           remediation="reinstall codeflux so pip brings a current apsw wheel")
    return CheckResult(id="python-sqlite", title="Python and SQLite", status=CheckStatus.OK, summary=summary)


def _check_git() -> CheckResult:
    git = shutil.which("git")
    fix = "install Git (Debian/Ubuntu: `apt-get install git`) and make sure it is on PATH"
    if git is None:
        return CheckResult(id="git", title="git", status=CheckStatus.MISSING, summary="git is not on PATH",
                           remediation=fix)
    try:
        out = subprocess.run([git, "--version"], capture_output=True, text=True, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return CheckResult(id="git", title="git", status=CheckStatus.FAILED,
                           summary="git is on PATH but `git --version` failed", remediation=fix)
    return CheckResult(id="git", title="git", status=CheckStatus.OK, summary=out.stdout.strip())


def _check_confinement() -> CheckResult:
    """Which OS box task commands run in; ``degraded`` when there is none (then programs are allowed once only)."""
    title = "command confinement"
    try:
        choice = choose_confinement()
    except (ConfinementUnavailableError, InvalidValueError) as error:
        return CheckResult(id="confinement", title=title, status=CheckStatus.FAILED, summary=str(error),
                           remediation=f"unset {CONFINEMENT_VARIABLE}, or install what the message names")
    if choice.mode is ConfinementMode.BUBBLEWRAP:
        return CheckResult(id="confinement", title=title, status=CheckStatus.OK,
                           summary=f"bubblewrap ({choice.bubblewrap}): commands run in their own namespaces, "
                                   "network only when granted")
    fix = ("install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`) and allow unprivileged user "
           "namespaces (Ubuntu ≥ 23.10: an AppArmor profile for bwrap)")
    if choice.forced:
        fix = f"unset {CONFINEMENT_VARIABLE} to use the strongest box this machine offers"
    if choice.mode is ConfinementMode.LANDLOCK:
        return CheckResult(id="confinement", title=title, status=CheckStatus.DEGRADED,
                           summary=f"landlock + seccomp (fallback): {choice.weaker_because}", remediation=fix,
                           required=False)
    return CheckResult(id="confinement", title=title, status=CheckStatus.DEGRADED,
                       summary=f"degraded: commands run unconfined ({choice.weaker_because}); each program must be "
                               "allowed once, every time", remediation=fix, required=False)


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _check_data_directory(location: DataLocation) -> CheckResult:
    path = location.directory
    title = "data directory"
    fix_choose = "pass --data-dir (or set CODEFLUX_HOME) to a writable directory"
    if path.exists() and not path.is_dir():
        return CheckResult(id="data-directory", title=title, status=CheckStatus.FAILED,
                           summary=f"{path} is not a directory", remediation=fix_choose)
    if not path.exists():
        parent = _nearest_existing(path)
        if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
            return CheckResult(id="data-directory", title=title, status=CheckStatus.OK,
                               summary=f"{path} will be created (0700) at first use")
        return CheckResult(id="data-directory", title=title, status=CheckStatus.FAILED,
                           summary=f"{path} cannot be created: {parent} is not writable", remediation=fix_choose)
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix=".codeflux-write-probe-"):
            pass
    except OSError as err:
        return CheckResult(id="data-directory", title=title, status=CheckStatus.FAILED,
                           summary=f"{path} is not writable ({err.strerror})",
                           remediation="fix the directory's permissions, or " + fix_choose)
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        return CheckResult(id="data-directory", title=title, status=CheckStatus.DEGRADED,
                           summary=f"{path} is writable but readable by others (mode {mode:04o})",
                           remediation=f"run `chmod 700 {path}`", required=False)
    return CheckResult(id="data-directory", title=title, status=CheckStatus.OK, summary=f"{path} is writable (0700)")


def _check_database(location: DataLocation) -> CheckResult:
    title = "database"
    if not location.database.exists():
        return CheckResult(id="database", title=title, status=CheckStatus.MISSING, required=False,
                           summary="no database yet (nothing is broken)",
                           remediation="it is created at first use, or now with `codeflux migrate`")
    supported = supported_schema_version()
    try:
        conn = open_connection(location.database, readonly=True)
    except StoreCorruptError:
        return _corrupt_database()
    except CodefluxError as err:
        return CheckResult(id="database", title=title, status=CheckStatus.FAILED,
                           summary=f"the database exists but cannot be opened ({err})",
                           remediation="check the file's permissions; `codeflux integrity-check` explains more")
    try:
        verdict = [row[0] for row in conn.execute("PRAGMA quick_check")]
        version = read_schema_version(conn)
    except (apsw.CorruptError, apsw.NotADBError, StoreCorruptError):
        return _corrupt_database()
    finally:
        conn.close()
    if verdict != ["ok"]:
        return _corrupt_database()
    if version > supported:
        return CheckResult(id="database", title=title, status=CheckStatus.FAILED,
                           summary=f"schema version {version} is newer than this codeflux ({supported})",
                           remediation="install the newer codeflux that wrote it; never run an older one on it")
    if version < supported:
        return CheckResult(id="database", title=title, status=CheckStatus.DEGRADED,
                           summary=f"schema version {version}; this codeflux uses {supported}",
                           remediation="run `codeflux migrate` (it takes a backup first)")
    return CheckResult(id="database", title=title, status=CheckStatus.OK,
                       summary=f"opens fine, schema version {version}, quick check ok")


def _check_write_ahead_log(location: DataLocation) -> CheckResult:
    """Whether opening the database would drop committed data from a damaged write-ahead log (read before
    any connection opens it; a damaged log is copied aside first), and whether a loss was recorded before."""
    title = "write-ahead log"
    if not location.database.exists():
        return CheckResult(id="write-ahead-log", title=title, status=CheckStatus.OK, summary="no database yet")
    try:
        damage = check_wal_before_open(location)
    except CodefluxError as err:
        return CheckResult(id="write-ahead-log", title=title, status=CheckStatus.FAILED, summary=str(err),
                           remediation="free space or fix the data directory's permissions, then run "
                                       "`codeflux doctor` again before any other command")
    if damage is not None:
        return CheckResult(id="write-ahead-log", title=title, status=CheckStatus.FAILED, summary=damage.finding,
                           remediation="keep the copy; `codeflux task recovery` lists the tasks whose recent work "
                                       "is unknown — inspect their worktrees before going on")
    recorded = _recorded_damage(location)
    if recorded:
        return CheckResult(id="write-ahead-log", title=title, status=CheckStatus.OK,
                           summary=f"intact now; recorded earlier: {recorded}")
    return CheckResult(id="write-ahead-log", title=title, status=CheckStatus.OK,
                       summary="intact (or none): opening the database loses nothing")


def _recorded_damage(location: DataLocation) -> str | None:
    try:
        with readonly_database(location) as conn:
            if read_schema_version(conn) < 1:
                return None
            found = recorded_store_damage(ReadView(conn))
    except CodefluxError:
        return None  # the database row says what is wrong with the file
    return None if not found else f"{found[-1].detail} (copy at {found[-1].copy})"


def _corrupt_database() -> CheckResult:
    return CheckResult(id="database", title="database", status=CheckStatus.FAILED,
                       summary="the database file is corrupt",
                       remediation="run `codeflux integrity-check` for details, then restore a backup "
                                   "(`<data dir>/backups/` or one made with `codeflux backup`)")


def _check_credential_store() -> CheckResult:
    status = probe_credential_store(timeout_s=5.0)
    if status.usable:
        return CheckResult(id="credential-store", title="OS credential store", status=CheckStatus.OK,
                           summary=f"usable ({status.backend})")
    return CheckResult(id="credential-store", title="OS credential store", status=CheckStatus.MISSING,
                       summary=f"not usable ({status.backend}): {status.reason}",
                       remediation=status.fix or "install and unlock an OS credential store")


def _check_provider_credentials(location: DataLocation) -> CheckResult:
    """Where each provider's key comes from (never the key): its environment variable (which wins), the OS
    credential store, or none (:func:`~codeflux.coordinator.provider_keys.key_origins`)."""
    title = "provider credentials"
    keys = stored_provider_keys()
    origins = key_origins(keys)
    sources = "; ".join(f"{name.value}: {origins[name].text}" for name in ProviderName
                        if origins[name].source is not None)
    ignored = process_keys().ignored_variables
    note = ("" if not ignored else
            f" ({', '.join(ignored)} set but not a key: ignored)")
    with_key = [name for name in ProviderName if origins[name].source in (KeySource.ENVIRONMENT,
                                                                            KeySource.CREDENTIAL_STORE)]
    if not keys.known:
        known = f"; {sources}" if sources else ""
        return CheckResult(id="provider-credentials", title=title,
                           status=CheckStatus.OK if with_key else CheckStatus.MISSING, required=False,
                           summary=f"stored keys cannot be listed: the credential store is not usable{known}{note}",
                           remediation="fix the OS credential store first (see above), or give a key in the "
                                       "environment (ANTHROPIC_API_KEY, OPENAI_API_KEY or CODEFLUX_<PROVIDER>_API_KEY)")
    if not with_key:
        return CheckResult(id="provider-credentials", title=title, status=CheckStatus.MISSING, required=False,
                           summary=f"no provider key (the scripted demo needs none){note}",
                           remediation="store one with `codeflux provider set --name anthropic` (the key is read "
                                       "from standard input), or set ANTHROPIC_API_KEY for codeflux's run")
    return CheckResult(id="provider-credentials", title=title, status=CheckStatus.OK,
                       summary=f"key from: {sources} (not contacted){note}")


def _check_worktree_space(location: DataLocation) -> CheckResult:
    title = "worktree space"
    probe = _nearest_existing(location.worktrees)
    try:
        stats = os.statvfs(probe)
    except OSError:
        return CheckResult(id="worktree-space", title=title, status=CheckStatus.UNKNOWN,
                           summary="free space could not be read",
                           remediation="check that the data directory's file system is mounted and readable")
    free = stats.f_bavail * stats.f_frsize
    mib = free // (1024 * 1024)
    if free < MIN_FREE_BYTES:
        return CheckResult(id="worktree-space", title=title, status=CheckStatus.DEGRADED, required=False,
                           summary=f"{mib} MiB free where task worktrees go",
                           remediation="free at least 512 MiB, or pass --data-dir on a larger disk")
    return CheckResult(id="worktree-space", title=title, status=CheckStatus.OK, summary=f"{mib} MiB free")


def _check_loopback_port(location: DataLocation, port: int) -> CheckResult:
    title = f"loopback port {port}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as err:
            if err.errno != errno.EADDRINUSE:
                return CheckResult(id="loopback-port", title=title, status=CheckStatus.FAILED,
                                   summary=f"127.0.0.1:{port} cannot be bound ({err.strerror})",
                                   remediation="check loopback networking, or pass --address with another port")
            if running_coordinator(location) is not None:
                return CheckResult(id="loopback-port", title=title, status=CheckStatus.OK,
                                   summary="in use by the codeflux instance of this data directory")
            return CheckResult(id="loopback-port", title=title, status=CheckStatus.DEGRADED, required=False,
                               summary=f"127.0.0.1:{port} is in use by another program",
                               remediation="stop that program, or start codeflux with --address 127.0.0.1:PORT")
    return CheckResult(id="loopback-port", title=title, status=CheckStatus.OK, summary=f"127.0.0.1:{port} is free")


def _read_rows(location: DataLocation, *, since_schema: int, before_schema: str,
               read: Callable[[ReadView], list[T]]) -> tuple[list[T], str]:
    """``read`` on a read-only connection (never changing anything), and the summary that says what none of
    them means: no database yet, a schema older than ``since_schema`` (``before_schema`` says so), or just 0.
    A database that cannot be read raises its :class:`CodefluxError`."""
    if not location.database.exists():
        return [], "0 (no database yet)"
    with readonly_database(location) as conn:
        if read_schema_version(conn) < since_schema:
            return [], f"0 ({before_schema})"
        return read(ReadView(conn)), "0"


def _unreadable(check_id: str, title: str, summary: str) -> CheckResult:
    return CheckResult(id=check_id, title=title, status=CheckStatus.UNKNOWN, summary=summary,
                       remediation="run `codeflux integrity-check`; it explains what is wrong")


def _tasks_waiting_for_recovery(view: ReadView) -> list[TaskRecord]:
    """``recovery-required`` tasks, and open ones left ambiguous by a recorded loss of committed data."""
    waiting = tasks_in_states(view, [TaskState.RECOVERY_REQUIRED])
    return waiting + [task for task in tasks_in_states(view, _OPEN_STATES)
                      if task.state is not TaskState.RECOVERY_REQUIRED and store_damage_of_task(view, task)]


def _check_tasks_needing_recovery(location: DataLocation) -> CheckResult:
    """How many tasks are ``recovery-required`` — or open and left ambiguous by a recorded loss of committed data
    (a damaged write-ahead log) — read on a read-only connection (never changed here)."""
    title = "tasks needing recovery"
    try:
        waiting, none = _read_rows(location, since_schema=_TASKS_SCHEMA_VERSION,
                                   before_schema="the database holds no tasks yet", read=_tasks_waiting_for_recovery)
    except CodefluxError as err:
        return _unreadable("recovery", title, f"could not read the tasks ({err})")
    if not waiting:
        return CheckResult(id="recovery", title=title, status=CheckStatus.OK, summary=none)
    listed = ", ".join(task.task_id.value for task in waiting[:5]) + (", …" if len(waiting) > 5 else "")
    return CheckResult(id="recovery", title=title, status=CheckStatus.DEGRADED, required=False,
                       summary=f"{len(waiting)} interrupted task(s) wait for you: {listed}",
                       remediation="`codeflux task recovery` shows what is known, ambiguous and recommended")


def _check_unfinished_accepts(location: DataLocation) -> CheckResult:
    """How many accept landings have no end (interrupted, or under way right now), read-only."""
    title = "interrupted accepts"
    try:
        unfinished, none = _read_rows(location, since_schema=_LANDINGS_SCHEMA_VERSION,
                                      before_schema="the database has no accept journal yet",
                                      read=lambda view: list(unfinished_landings(view)))
    except CodefluxError as err:
        return _unreadable("accepts", title, f"could not read the accept journal ({err})")
    if not unfinished:
        return CheckResult(id="accepts", title=title, status=CheckStatus.OK, summary=none)
    listed = ", ".join(f"{row.task_id} on {row.branch_ref.removeprefix('refs/heads/')}" for row in unfinished[:3])
    return CheckResult(id="accepts", title=title, status=CheckStatus.DEGRADED, required=False,
                       summary=f"{len(unfinished)} accept(s) did not finish (or are landing now): {listed}",
                       remediation="`codeflux task recovery` finishes or rolls each back and says which")

