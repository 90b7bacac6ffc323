"""Launchers: programs that start another program with other limits, identity, namespaces or clocks.

Most are described as a :class:`~codeflux.authority.classify.wrappers.Wrapper` (a strict grammar, so an
option codeflux does not know makes the command unknowable rather than misplaced): ``setpriv``,
``prlimit``, ``dbus-run-session``, ``numactl``, ``fakeroot``, ``fakechroot``, ``xvfb-run``, ``unshare``,
``ssh-agent``, proxies (``proxychains``, ``torsocks`` add ``network``), process supervisors and small
helpers. Options that run a program of their own (``fakeroot --faked``, ``dbus-run-session
--dbus-daemon``) are read as commands; options that load code or configuration codeflux does not read
(``fakeroot --lib``, ``dbus-run-session --config-file``) make the request unknowable. A few read their
argv their own way and have readers here: ``capsh`` (``--`` hands the rest to bash, ``==`` to capsh),
``faketime`` (exact option words, then a timestamp), ``valgrind`` (``--opt=value`` only), ``script
-c``, ``sg`` and ``hyperfine`` (shell strings).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from codeflux.authority.classify.commands import Command, Handler, run_inner, run_script
from codeflux.authority.classify.findings import Findings
from codeflux.authority.classify.hosts import host_of
from codeflux.authority.classify.options import Grammar, option_grammar, parse_options
from codeflux.authority.classify.wrappers import Wrapper, wrap_command
from codeflux.domain.capabilities import Capability

_C = Capability
_PROXIED: Final = ((_C.NETWORK, "sends its command's traffic through a proxy"),)


def _capsh(command: Command, out: Findings) -> None:
    """``capsh [--opt=value …] -- ARGS`` runs ``bash ARGS`` (``--shell=`` another); ``== ARGS`` capsh again."""
    shell = "/bin/bash"
    for index, arg in enumerate(command.args):
        rest = list(command.args[index + 1 :])
        if arg in {"--", "-+"}:
            run_inner([shell, *rest], command, out)
            return
        if arg in {"==", "=+"}:
            run_inner(["capsh", *rest], command, out)
            return
        if not arg.startswith("--"):
            out.unknowable("capsh has arguments codeflux cannot read")
            return
        name, _, value = arg.partition("=")
        if name == "--shell":
            shell = value


_FAKETIME_FLAGS: Final = frozenset({"-m", "-f", "--exclude-monotonic", "--disable-shm"})


def _faketime(command: Command, out: Findings) -> None:
    """faketime matches exact option words (no clusters), then takes a timestamp, then the command."""
    args, index = command.args, 0
    while index < len(args):
        if args[index] in _FAKETIME_FLAGS:
            index += 1
        elif args[index] in {"-p", "--date-prog"}:
            if args[index] == "--date-prog" and index + 1 < len(args):
                run_inner([args[index + 1], "-d", "TIMESTAMP", "+%s"], command, out)
            index += 2
        else:
            break
    inner = args[index + 1 :]
    if inner:
        run_inner(inner, command, out)


_VALGRIND_SOCKETS: Final = frozenset({"--log-socket", "--xml-socket", "--debuginfo-server"})


def _valgrind(command: Command, out: Findings) -> None:
    """Every valgrind option (its tools' too) is one word, values after ``=``; the program follows."""
    args, index = command.args, 0
    while index < len(args) and args[index].startswith("-"):
        name, _, value = args[index].partition("=")
        if name in _VALGRIND_SOCKETS:
            out.network(f"valgrind {name} sends its report over the network", [host_of(value, bare_names=True)])
        if name == "--db-command":
            run_script(value, command, out)
        index += 1
    if index < len(args):
        run_inner(args[index:], command, out)


_SCRIPT: Final = option_grammar(
    "aefqhV", "IOBTmEoc", "--append --return --flush --force --quiet --help --version --timing",
    "--log-in --log-out --log-io --log-timing --logging-format --echo --output-limit --command",
    short_optional="t", strict=True,
)


def _script(command: Command, out: Findings) -> None:
    """util-linux script: ``-c COMMAND`` is a shell string; its operand is the log file, not a command."""
    parsed = parse_options(command.args, _SCRIPT)
    if parsed is None:
        out.unknowable("script has options codeflux cannot read, so its command is unknown")
        return
    scripts = parsed.values("-c", "--command")
    for script in scripts:
        run_script(script, command, out)
    if not scripts:
        out.unknowable("script without -c starts a shell")


def _sg(command: Command, out: Findings) -> None:
    """``sg [-] GROUP [-c] COMMAND``: the command is handed to ``/bin/sh -c``."""
    out.add(_C.PRIVILEGED, "sg runs a command with another group")
    args = list(command.args[1:] if command.args[:1] == ("-",) else command.args)
    words = args[2:] if args[1:2] == ["-c"] else args[1:]
    if words:
        run_script(" ".join(words), command, out)
    else:
        out.unknowable("sg without a command starts a shell")


_HYPERFINE: Final = option_grammar(
    short_values="wmMrspcCDSunLP",
    long_values="--warmup --min-runs --max-runs --runs --setup --prepare --cleanup --conclude "
    "--parameter-step-size --shell --time-unit --command-name --parameter-list --parameter-scan --style --sort "
    "--export-asciidoc --export-csv --export-json --export-markdown --export-orgmode --output --input "
    "--min-benchmarking-time --reference",
    stop_at_operand=False,
)
_HYPERFINE_SCRIPTS: Final = ("-s", "-p", "-c", "-C", "--setup", "--prepare", "--cleanup", "--conclude", "--reference")


def _hyperfine(command: Command, out: Findings) -> None:
    """Every benchmarked command (operand) and setup/prepare/cleanup value is a shell string."""
    parsed = parse_options(command.args, _HYPERFINE)
    if parsed is None:
        out.unknowable("hyperfine has options codeflux cannot read, so its commands are unknown")
        return
    for script in [*parsed.values(*_HYPERFINE_SCRIPTS), *parsed.operands]:
        run_script(script, command, out)


def _strict(short_flags: str = "", short_values: str = "", long_flags: str = "", long_values: str = "", *,
            short_optional: str = "") -> Grammar:
    """A wrapper grammar: an option it does not list makes the wrapped command unknowable."""
    return option_grammar(short_flags, short_values, long_flags, long_values, strict=True,
                          short_optional=short_optional)


_W = Wrapper
_wrap = wrap_command

LAUNCHER_PROGRAMS: Final[Mapping[str, Handler]] = {
    "setpriv": _wrap(_W(grammar=_strict(
        "dhV", "", "--dump --nnp --no-new-privs --clear-groups --keep-groups --init-groups --reset-env --help "
        "--version", "--ambient-caps --inh-caps --bounding-set --ruid --euid --rgid --egid --reuid --regid --groups "
        "--securebits --pdeathsig --selinux-label --apparmor-profile --landlock-access --landlock-rule "
        "--seccomp-filter"))),
    "prlimit": _wrap(_W(grammar=_strict(
        "hV", "po", "--noheadings --raw --verbose --help --version --core --data --nice --fsize --sigpending "
        "--memlock --rss --nofile --msgqueue --rtprio --stack --cpu --nproc --as --locks --rttime",
        "--pid --output", short_optional="cdefilmnqrstuvxy"))),
    "dbus-run-session": _wrap(_W(grammar=_strict(long_flags="--help --version",
                                                 long_values="--config-file --dbus-daemon"),
                                 program_options=frozenset({"--dbus-daemon"}),
                                 unknowable_options=frozenset({"--config-file"}))),
    "numactl": _wrap(_W(grammar=_strict(
        "abslHtdDuTVh", "ipcNCmSfoLMIPw", "--all --balancing --show --localalloc --hardware --strict --dump "
        "--dump-nodes --huge --touch --verify --version --cpu-compress --help", "--interleave --weighted-interleave "
        "--preferred --preferred-many --cpubind --cpunodebind --physcpubind --membind --shm --file --offset --length "
        "--shmmode --shmid"))),
    "fakeroot": _wrap(_W(grammar=_strict("uvh", "lfisb", "--unknown-is-real --version --help",
                                         "--lib --faked --fd-base"),
                         needs_command=True, program_options=frozenset({"-f", "--faked"}),
                         unknowable_options=frozenset({"-l", "--lib"}))),
    "fakechroot": _wrap(_W(grammar=_strict("shv", "ldecb", "--use-system-libs --help --version",
                                           "--lib --elfloader --environment --config-dir --bindir"),
                           needs_command=True,
                           unknowable_options=frozenset({"-l", "--lib", "-d", "--elfloader", "-c", "--config-dir"}))),
    "xvfb-run": _wrap(_W(grammar=_strict("adhl", "efnpsw", "--auto-servernum --auto-display --help --listen-tcp",
                                         "--error-file --auth-file --server-num --xauth-protocol --server-args "
                                         "--wait"),
                         network_options=frozenset({"-l", "--listen-tcp"}))),
    "unshare": _wrap(_W(grammar=_strict(
        "muinpUCTfrchV", "RwSGl", "--mount --uts --ipc --net --pid --user --cgroup --time --fork --map-root-user "
        "--map-current-user --map-auto --kill-child --mount-proc --keep-caps --help --version", "--map-user "
        "--map-group --map-users --map-groups --propagation --setgroups --root --wd --setuid --setgid --monotonic "
        "--boottime --load-interp"), needs_command=True)),
    "ssh-agent": _wrap(_W(grammar=_strict("csDdkh", "aEOPt"),
                          needs=((_C.CREDENTIAL, "holds private keys for its command"),))),
    "proxychains": _wrap(_W(grammar=_strict("q", "f"), needs=_PROXIED)),
    "proxychains4": _wrap(_W(grammar=_strict("q", "f"), needs=_PROXIED)),
    "torsocks": _wrap(_W(grammar=_strict("idq6h", "upaP", "--isolate --debug --quiet --shell --version --help",
                                         "--user --pass --address --port"),
                         needs=_PROXIED, unknowable_options=frozenset({"--shell"}))),
    "torify": _wrap(_W(grammar=_strict(), needs=_PROXIED)),
    "tsocks": _wrap(_W(grammar=_strict(), needs=_PROXIED)),
    "trickle": _wrap(_W(grammar=_strict("hvVs", "duwtln"))),
    "rlwrap": _wrap(_W(grammar=_strict("AcGhiInNorRUvWX", "bCDefgHlMOPqsStwz", short_optional="amp"),
                       script_options=frozenset({"-z"}))),
    "eatmydata": _wrap(_W(grammar=_strict(long_flags="--help --version"))),
    "catchsegv": _wrap(_W(grammar=_strict(long_flags="--help --version"))),
    "chronic": _wrap(_W(grammar=_strict("ev"))),
    "ifne": _wrap(_W(grammar=_strict("n"))),
    "nocache": _wrap(_W(grammar=_strict("", "n"))),
    "tini": _wrap(_W(grammar=_strict("hsvwgl", "pe"))),
    "dumb-init": _wrap(_W(grammar=_strict("cvVh", "r", "--single-child --verbose --version --help", "--rewrite"))),
    "cgexec": _wrap(_W(grammar=_strict("", "g", "--sticky"))),
    "softlimit": _wrap(_W(grammar=_strict("", "acdflmoprst"))),
    "chpst": _wrap(_W(grammar=_strict("vP012V", "uUbe/CnlLmdofcprt"), privileged=True)),
    "gosu": _wrap(_W(grammar=_strict(long_flags="--help --version"), preamble=1, privileged=True)),
    "su-exec": _wrap(_W(grammar=_strict(), preamble=1, privileged=True)),
    "setuidgid": _wrap(_W(grammar=_strict(), preamble=1, privileged=True)),
    "envdir": _wrap(_W(grammar=_strict(), preamble=1,
                       needs=((_C.PRIVILEGED, "sets variables such as LD_PRELOAD from files"),))),
    "capsh": _capsh,
    "faketime": _faketime,
    "valgrind": _valgrind,
    "script": _script,
    "sg": _sg,
    "hyperfine": _hyperfine,
}
"""Launchers and the small programs that run a command they are given, by name."""
