"""The worker environment is an allow-list: credentials, agent sockets, cloud config and proxies never pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.errors import UnsafeArgumentError
from codeflux.worker.environment import (
    DEFAULT_PATH,
    build_worker_environment,
    command_environment,
    is_sensitive_environment_name,
)

HOME = Path("/data/workers/tsk_1/home")
TMP = Path("/data/workers/tsk_1/tmp")

SENSITIVE = {
    "OPENAI_API_KEY": "sk-proj-canary",
    "ANTHROPIC_API_KEY": "sk-ant-canary",
    "CANARY_API_KEY": "canary",
    "GITHUB_TOKEN": "ghp_canary",
    "GH_TOKEN": "ghp_canary",
    "NPM_TOKEN": "canary",
    "DB_PASSWORD": "canary",
    "MY_SECRET": "canary",
    "CLIENT_SECRET_VALUE": "canary",
    "AWS_SECRET_ACCESS_KEY": "canary",
    "AWS_ACCESS_KEY_ID": "canary",
    "AWS_PROFILE": "canary",
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/u/gcp.json",
    "AZURE_CLIENT_ID": "canary",
    "DOCKER_HOST": "unix:///var/run/docker.sock",
    "DOCKER_CONFIG": "/home/u/.docker",
    "KUBECONFIG": "/home/u/.kube/config",
    "SSH_AUTH_SOCK": "/run/user/0/ssh-agent",
    "SSH_AGENT_PID": "123",
    "GPG_AGENT_INFO": "/run/gpg",
    "CODEFLUX_HOME": "/data",
    "CODEFLUX_CREDENTIAL_X": "canary",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus",
    "XDG_RUNTIME_DIR": "/run/user/0",
    "HTTP_PROXY": "http://proxy:3128",
    "https_proxy": "http://user:pw@proxy:3128",
    "ALL_PROXY": "socks5://proxy",
    "NO_PROXY": "localhost",
    "NETRC": "/home/u/.netrc",
}


def test_credentials_handles_and_proxies_never_reach_the_worker() -> None:
    base = {**SENSITIVE, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    environment = build_worker_environment(base=base, home=HOME, tmpdir=TMP)
    leaked = sorted(set(environment) & set(SENSITIVE))
    assert leaked == []
    assert not any("canary" in value for value in environment.values())


def test_only_the_allow_list_passes_and_the_per_task_directories_are_set() -> None:
    base = {"PATH": "/usr/local/bin:/usr/bin", "LANG": "de_DE.UTF-8", "LC_ALL": "C.UTF-8", "LC_TIME": "C",
            "TZ": "UTC", "USER": "me", "SHELL": "/bin/zsh", "EDITOR": "vim", "HOME": "/root", "TERM": "xterm",
            "PYTHONPATH": "/evil", "LD_PRELOAD": "/evil.so", "GIT_DIR": "/elsewhere", "TMPDIR": "/tmp"}
    environment = build_worker_environment(base=base, home=HOME, tmpdir=TMP)
    assert environment == {
        "PATH": "/usr/local/bin:/usr/bin",
        "LANG": "de_DE.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_TIME": "C",
        "TZ": "UTC",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": str(HOME),
        "TMPDIR": str(TMP),
        "TMP": str(TMP),
        "TEMP": str(TMP),
    }


@pytest.mark.parametrize(("path", "expected"), [
    ("", DEFAULT_PATH),
    (".:/usr/bin", "/usr/bin"),
    ("/usr/bin::bin:./node_modules/.bin:/bin", "/usr/bin:/bin"),
    ("relative", DEFAULT_PATH),
])
def test_search_path_entries_that_would_run_worktree_programs_are_dropped(path: str, expected: str) -> None:
    assert build_worker_environment(base={"PATH": path}, home=HOME, tmpdir=TMP)["PATH"] == expected


def test_a_missing_locale_defaults_to_utf8() -> None:
    assert build_worker_environment(base={}, home=HOME, tmpdir=TMP)["LANG"] == "C.UTF-8"


@pytest.mark.parametrize("name", sorted(SENSITIVE))
def test_every_sensitive_name_is_recognized(name: str) -> None:
    assert is_sensitive_environment_name(name)
    assert is_sensitive_environment_name(name.lower())


@pytest.mark.parametrize("name", ["PATH", "LANG", "LC_ALL", "TZ", "CI", "RUST_BACKTRACE", "NODE_ENV"])
def test_ordinary_names_are_not_sensitive(name: str) -> None:
    assert not is_sensitive_environment_name(name)


def test_command_overrides_are_added_and_checked_again() -> None:
    worker = build_worker_environment(base={"PATH": "/usr/bin"}, home=HOME, tmpdir=TMP)
    environment = command_environment(worker, {"CI": "1", "PATH": "/opt/bin:relative"})
    assert environment["CI"] == "1"
    assert environment["PATH"] == "/opt/bin"
    assert environment["HOME"] == str(HOME)


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("OPENAI_API_KEY", "sk", "credential"),
    ("SSH_AUTH_SOCK", "/run/agent", "credential"),
    ("HOME", "/root", "per-task"),
    ("TMPDIR", "/tmp", "per-task"),
    ("BAD NAME", "x", "malformed"),
    ("1X", "x", "malformed"),
    ("OK", "a\x00b", "NUL"),
])
def test_a_dangerous_override_is_refused(name: str, value: str, reason: str) -> None:
    with pytest.raises(UnsafeArgumentError, match=reason):
        command_environment({"PATH": "/usr/bin"}, {name: value})


@settings(deadline=None)
@given(base=st.dictionaries(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcxyz0123456789", min_size=1, max_size=24),
                            st.text(max_size=20).filter(lambda v: "\x00" not in v), max_size=30))
def test_whatever_the_base_holds_only_allow_listed_names_come_out(base: dict[str, str]) -> None:
    environment = build_worker_environment(base=base, home=HOME, tmpdir=TMP)
    fixed = {"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT",
             "PYTHONDONTWRITEBYTECODE", "HOME", "TMPDIR", "TMP", "TEMP"}
    for name in environment:
        assert name in fixed or (name.startswith("LC_") and name[3:].isalpha() and name.isupper())
        assert not is_sensitive_environment_name(name)
