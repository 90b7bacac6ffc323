"""The environment a worker and every program it runs see: an allow-list, never the coordinator's own.

:func:`build_worker_environment` keeps only ``PATH`` (absolute entries only: an empty or relative entry
would run programs from the untrusted worktree), ``LANG``, ``LANGUAGE``, ``LC_*`` and ``TZ`` from the
base environment, and sets the rest itself: ``HOME`` and ``TMPDIR``/``TMP``/``TEMP`` to the per-task
directories, ``TERM=dumb``, ``PAGER=cat``, ``GIT_PAGER=cat``, ``GIT_TERMINAL_PROMPT=0`` (nothing may wait
on a terminal that is not there) and ``PYTHONDONTWRITEBYTECODE=1`` (no ``__pycache__`` in the diff).

Credentials have no path through it: besides the allow-list, every name is checked against
:func:`is_sensitive_environment_name` (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, cloud,
docker and kube configuration, agent sockets, proxies, ``CODEFLUX_*``, the session bus…), which also
guards the per-request overrides in :func:`command_environment`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

# `typing` costs every command's start ~6 ms (this module is imported by the entry); the annotations
# below are never evaluated (`from __future__ import annotations`), so it is imported for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final


__all__ = [
    "DEFAULT_PATH",
    "ScreenedEnvironment",
    "build_worker_environment",
    "command_environment",
    "is_sensitive_environment_name",
    "worker_search_path",
]

DEFAULT_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
_PASSED_THROUGH: Final = frozenset({"PATH", "LANG", "LANGUAGE", "TZ"})
_LOCALE_NAME = re.compile(r"LC_[A-Z]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_FIXED: Final[Mapping[str, str]] = {
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
}
_PER_TASK_NAMES: Final = frozenset({"HOME", "TMPDIR", "TMP", "TEMP"})

_SENSITIVE_SUFFIXES: Final = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_PASSWD", "_PASS", "_CREDENTIALS",
                              "_CREDENTIAL", "_KEYS", "_AUTH", "_PAT")
_SENSITIVE_PARTS: Final = ("SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY",
                           "PRIVATE_KEY", "ACCESS_KEY", "SESSION_KEY", "AUTH_")
_SENSITIVE_PREFIXES: Final = ("AWS_", "GOOGLE_", "GCLOUD_", "CLOUDSDK_", "GCP_", "AZURE_", "ARM_", "DOCKER_",
                              "KUBE", "CODEFLUX_", "SSH_", "GPG_", "GNUPG", "VAULT_", "OPENAI_", "ANTHROPIC_",
                              "NPM_CONFIG_", "PIP_", "TWINE_", "HF_", "HUGGING")
_SENSITIVE_NAMES: Final = frozenset({
    "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "KUBECONFIG", "DBUS_SESSION_BUS_ADDRESS", "NETRC",
    "GH_CONFIG_DIR", "XDG_RUNTIME_DIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY",
    "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_PARAMETERS", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
})  # fmt: skip


def is_sensitive_environment_name(name: str) -> bool:
    """True if ``name`` could carry a credential or a handle to one (case-insensitive)."""
    upper = name.upper()
    return (
        upper in _SENSITIVE_NAMES
        or upper.endswith(_SENSITIVE_SUFFIXES)
        or upper.startswith(_SENSITIVE_PREFIXES)
        or any(part in upper for part in _SENSITIVE_PARTS)
    )


def build_worker_environment(*, base: Mapping[str, str], home: Path, tmpdir: Path) -> dict[str, str]:
    """The allow-listed environment for a worker whose per-task directories are ``home`` and ``tmpdir``.

    Nothing outside the allow-list of the module docstring survives, whatever ``base`` holds.
    """
    environment: dict[str, str] = {}
    for name, value in base.items():
        if name in environment or is_sensitive_environment_name(name) or "\x00" in value:
            continue
        if name in _PASSED_THROUGH or _LOCALE_NAME.fullmatch(name):
            environment[name] = value
    environment["PATH"] = _absolute_search_path(environment.get("PATH", ""))
    if "LANG" not in environment:
        environment["LANG"] = "C.UTF-8"
    environment.update(_FIXED)
    environment["HOME"] = str(home)
    for name in ("TMPDIR", "TMP", "TEMP"):
        environment[name] = str(tmpdir)
    return environment


class ScreenedEnvironment(Mapping[str, str]):
    """A worker environment with every sensitive name removed, screened once and read-only afterwards.

    The worker's environment is fixed for its whole life, so it is screened when the worker starts
    rather than again for every command; :func:`command_environment` then skips the screening for it
    (the per-request overrides are still checked every time).
    """

    __slots__ = ("_items",)

    def __init__(self, environment: Mapping[str, str]) -> None:
        self._items = {name: value for name, value in environment.items()
                              if not is_sensitive_environment_name(name)}

    def __getitem__(self, name: str) -> str:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def copy(self) -> dict[str, str]:
        return dict(self._items)


def command_environment(worker_environment: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, str]:
    """The environment of one command: the worker's (already allow-listed) plus the request's overrides.

    Sensitive names are dropped from ``worker_environment`` (already done once for a
    :class:`ScreenedEnvironment`). Overrides are part of the operation identity and were chosen by the
    coordinator; they are checked again here. :class:`UnsafeArgumentError` for a malformed or sensitive
    name, a NUL byte, or a name that would replace a per-task directory (``HOME``, ``TMPDIR``…).
    """
    from codeflux.domain.errors import UnsafeArgumentError  # noqa: PLC0415 - the errors are not needed to start

    if isinstance(worker_environment, ScreenedEnvironment):
        environment = worker_environment.copy()
    else:
        environment = {
            name: value for name, value in worker_environment.items() if not is_sensitive_environment_name(name)
        }
    for name, value in overrides.items():
        field = f"env.{name[:64]}"
        if _ENV_NAME.fullmatch(name) is None:
            raise UnsafeArgumentError(field="env", reason="has a malformed variable name")
        if "\x00" in value:
            raise UnsafeArgumentError(field=field, reason="contains a NUL byte")
        if is_sensitive_environment_name(name):
            raise UnsafeArgumentError(field=field, reason="could carry a credential")
        if name.upper() in _PER_TASK_NAMES:
            raise UnsafeArgumentError(field=field, reason="would replace a per-task directory")
        environment[name] = value
    if "PATH" in overrides:
        environment["PATH"] = _absolute_search_path(environment["PATH"])
    return environment


def worker_search_path(base: Mapping[str, str]) -> str:
    """The ``PATH`` a worker built from ``base`` searches (absolute entries only)."""
    return _absolute_search_path(base.get("PATH", ""))


def _absolute_search_path(value: str) -> str:
    entries = [entry for entry in value.split(":") if entry.startswith("/")]
    return ":".join(entries) if entries else DEFAULT_PATH
