"""Package managers: language ones (pip, npm, cargo …), system ones (apt-get, dnf …) and ``make``.

Each language manager is a table of subcommands to what they do (install, download, uninstall, publish,
log in, run project code), with the flags that keep it offline or send it outside the project
(``pip --user``, ``npm -g``). Subcommands that run a command (``uv run``, ``bundle exec``) hand it on.
``make install`` installs; ``make --eval``/``-E`` runs make code given in the argv (unknowable).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from codeflux.authority.classify.commands import Command, Handler, run_inner
from codeflux.authority.classify.findings import Findings
from codeflux.authority.classify.interpreters import classify_inline_code
from codeflux.authority.classify.options import (
    Grammar,
    option_grammar,
    option_values,
    parse_options,
    short_letters,
    table_words,
)
from codeflux.domain.capabilities import Capability

_C = Capability


@dataclass(frozen=True, slots=True, kw_only=True)
class _Act:
    """What a subcommand does: the capabilities it needs and the phrase that explains them."""

    capabilities: tuple[Capability, ...]
    phrase: str


_INSTALLS: Final = _Act(capabilities=(_C.NETWORK, _C.INSTALL), phrase="downloads and installs packages")
_DOWNLOADS: Final = _Act(capabilities=(_C.NETWORK,), phrase="downloads from a package index")
_UNINSTALLS: Final = _Act(capabilities=(_C.INSTALL,), phrase="changes the installed packages")
_PUBLISHES: Final = _Act(capabilities=(_C.NETWORK, _C.EXTERNAL_COMMUNICATION), phrase="publishes to a registry")
_LOGS_IN: Final = _Act(capabilities=(_C.NETWORK, _C.CREDENTIAL), phrase="handles registry credentials")
_RUNS: Final = _Act(capabilities=(), phrase="runs project code")


def _acts(**groups: str) -> Mapping[str, _Act]:
    table = {"installs": _INSTALLS, "downloads": _DOWNLOADS, "uninstalls": _UNINSTALLS,
             "publishes": _PUBLISHES, "logs_in": _LOGS_IN, "runs": _RUNS}
    return {word: table[group] for group, words in groups.items() for word in words.split()}


@dataclass(frozen=True, slots=True, kw_only=True)
class _PackageManager:
    subcommands: Mapping[str, _Act]
    bare: _Act | None = None  # what the program does without a subcommand (yarn installs)
    offline_flags: frozenset[str] = frozenset()
    global_flags: frozenset[str] = frozenset()  # install outside the project (npm -g, pip --user)
    delegate: Mapping[str, str] = field(default_factory=dict)  # `uv pip …` is pip
    runs_inner: Mapping[str, Grammar] = field(default_factory=dict)  # `uv run CMD …` runs CMD
    inline: frozenset[str] = frozenset()  # `bun -e CODE`


def _package_manager(manager: _PackageManager) -> Handler:
    def handle(command: Command, out: Findings) -> None:
        inline = [arg for arg in command.args if arg.split("=")[0] in manager.inline]
        if inline:
            index = command.args.index(inline[0])
            code = inline[0].split("=", 1)[1] if "=" in inline[0] else " ".join(command.args[index + 1 :])
            classify_inline_code(command.program, code, out)
            return
        words = [arg for arg in command.args if not arg.startswith("-")]
        sub = next((word for word in words if word in manager.subcommands or word in manager.delegate), None)
        rest = command.args[command.args.index(sub) + 1 :] if sub is not None else ()
        if sub is not None and sub in manager.delegate:
            run_inner([manager.delegate[sub], *rest], command, out)
            return
        if sub is not None and sub in manager.runs_inner:
            parsed = parse_options(rest, manager.runs_inner[sub])
            if parsed is None:
                out.unknowable(f"{command.program} {sub} has options codeflux cannot read")
            elif parsed.operands:
                run_inner(parsed.operands, command, out)
        act = manager.subcommands[sub] if sub is not None else manager.bare
        if act is None:
            return
        offline = any(arg.split("=")[0] in manager.offline_flags for arg in command.args)
        label = f"{command.program} {sub}" if sub else command.program
        for capability in act.capabilities:
            if not (offline and capability is _C.NETWORK):
                out.add(capability, f"{label} {act.phrase}")
        if act.capabilities and any(arg.split("=")[0] in manager.global_flags for arg in command.args):
            out.add(_C.OUTSIDE_WRITE, f"{label} installs outside the project")

    return handle


_PIP: Final = _PackageManager(
    subcommands=_acts(installs="install", downloads="download wheel index search", uninstalls="uninstall",
                      runs="list show freeze check config cache debug hash inspect help"),
    offline_flags=frozenset({"--no-index"}),
    global_flags=frozenset({"--user", "--root", "--prefix", "--target", "-t", "--break-system-packages"}),
)
_NPM: Final = _PackageManager(
    subcommands=_acts(
        installs="install i in ins inst insta instal isnt isnta isntal isntall add ci clean-install ic "
        "install-clean isntall-clean install-ci-test cit install-test it update up upgrade udpate dedupe ddp "
        "exec x init create innit rebuild rb link ln",
        uninstalls="uninstall remove rm r un unlink prune",
        publishes="publish unpublish deprecate dist-tag owner access star unstar team org hook",
        logs_in="login adduser add-user logout token whoami",
        downloads="audit outdated view v info show search s se find ping doctor fund repo docs home bugs pack",
        runs="run run-script rum urn test t tst start stop restart config help ls list",
    ),
    offline_flags=frozenset({"--offline"}),
    global_flags=frozenset({"-g", "--global", "--location"}),
)
_YARN: Final = _PackageManager(
    subcommands=_acts(installs="install add upgrade up dlx create import set", uninstalls="remove",
                      publishes="publish npm", logs_in="login logout", downloads="info outdated audit",
                      runs="run test start build exec node workspace workspaces why list help"),
    bare=_INSTALLS,
    runs_inner={"exec": option_grammar()},
    offline_flags=frozenset({"--offline"}),
    global_flags=frozenset({"global"}),
)
_PNPM: Final = _PackageManager(
    subcommands=_acts(installs="install i add update up upgrade dlx create fetch import rebuild link env",
                      uninstalls="remove rm uninstall un prune", publishes="publish", logs_in="login logout",
                      downloads="audit outdated view info", runs="run test start exec list ls why help"),
    offline_flags=frozenset({"--offline"}),
    global_flags=frozenset({"-g", "--global"}),
    runs_inner={"exec": option_grammar(short_values="C", long_values="--dir --filter")},
)
_BUN: Final = _PackageManager(
    subcommands=_acts(installs="install i add update upgrade x create link", uninstalls="remove rm unlink",
                      publishes="publish", runs="run test build"),
    global_flags=frozenset({"-g", "--global"}),
    inline=frozenset({"-e", "--eval", "-p", "--print"}),
)
_UV: Final = _PackageManager(
    subcommands=_acts(installs="add remove sync lock run tool python venv build export tree init",
                      publishes="publish", runs="version help cache self generate-shell-completion"),
    delegate={"pip": "pip"},
    offline_flags=frozenset({"--offline"}),
    runs_inner={"run": option_grammar(short_values="pw", long_values="--with --with-editable --with-requirements "
                                      "--python --package --extra --group --env-file --directory --project --index "
                                      "--index-url --extra-index-url --find-links --only-group --no-group")},
)
_POETRY: Final = _PackageManager(
    subcommands=_acts(installs="install add remove update lock sync self", publishes="publish",
                      runs="run shell build check show env config version new init search help"),
    runs_inner={"run": option_grammar(short_values="PC", long_values="--directory --project")},
)
_PIPX: Final = _PackageManager(
    subcommands=_acts(installs="install install-all upgrade upgrade-all inject reinstall reinstall-all run",
                      uninstalls="uninstall uninstall-all uninject", runs="list ensurepath completions"),
    global_flags=frozenset({"--global"}),
)
_CONDA: Final = _PackageManager(
    subcommands=_acts(installs="install create update upgrade env", uninstalls="remove uninstall",
                      downloads="search", runs="run list info activate deactivate clean config"),
    offline_flags=frozenset({"--offline"}),
    runs_inner={"run": option_grammar(short_values="np", long_values="--name --prefix --cwd")},
)
_CARGO: Final = _PackageManager(
    subcommands=_acts(installs="install add", uninstalls="uninstall remove rm",
                      downloads="update fetch build b check c test t run r bench doc d clippy tree vendor "
                      "generate-lockfile metadata search package",
                      publishes="publish yank owner", logs_in="login logout",
                      runs="fmt clean new init help version"),
    offline_flags=frozenset({"--offline", "--frozen"}),
)
_GO: Final = _PackageManager(
    subcommands=_acts(installs="get install", downloads="mod build test run vet list generate work",
                      runs="fmt env version doc help clean bug fix tool"),
)
_GEM: Final = _PackageManager(
    subcommands=_acts(installs="install update fetch", uninstalls="uninstall cleanup", publishes="push yank owner",
                      logs_in="signin signout", runs="list build env help contents which"),
)
_BUNDLE: Final = _PackageManager(
    subcommands=_acts(installs="install update add lock binstubs cache outdated", uninstalls="remove clean",
                      runs="exec check list info config help"),
    bare=_INSTALLS,
    runs_inner={"exec": option_grammar()},
)
_COMPOSER: Final = _PackageManager(
    subcommands=_acts(installs="install update require create-project global", uninstalls="remove",
                      runs="run run-script dump-autoload show validate help"),
)
_BREW: Final = _PackageManager(
    subcommands=_acts(installs="install upgrade reinstall tap update fetch bundle", uninstalls="uninstall remove rm "
                      "untap cleanup", runs="list info search config doctor help"),
)
_TWINE: Final = _PackageManager(subcommands=_acts(publishes="upload register", runs="check"))


_SYSTEM_INSTALLS: Final = frozenset(table_words("install reinstall upgrade dist-upgrade full-upgrade add update "
                                                "refresh download source build-dep in up --sync --upgrade"))
_SYSTEM_REMOVES: Final = frozenset(table_words("remove purge autoremove erase del uninstall --remove"))


def _system_package_manager(command: Command, out: Findings) -> None:
    """Subcommand words, and pacman's operation letters anywhere in a cluster (``-Syu``, ``-Rns``, ``-nsR``)."""
    out.add(_C.PRIVILEGED, f"{command.program} changes system packages (it needs root)")
    words = {arg for arg in command.args if not arg.startswith("-") or arg.startswith("--")}
    letters = set(short_letters(command.args)) if command.program == "pacman" else set()
    if words & _SYSTEM_INSTALLS or letters & {"S", "U"} or any(
        arg.startswith("-S") or arg in {"-U", "-i"} for arg in command.args
    ):
        out.add(_C.INSTALL, f"{command.program} installs or updates packages")
        out.network(f"{command.program} downloads packages", [None])
    if words & _SYSTEM_REMOVES or "R" in letters or any(arg.startswith("-R") for arg in command.args):
        out.add(_C.INSTALL, f"{command.program} removes packages")


def _make(command: Command, out: Findings) -> None:
    if option_values(command.args, short="E", long=("--eval",), value_letters="CfIoW"):
        out.unknowable("make --eval/-E evaluates make code, which can run any shell command")
    targets = {arg for arg in command.args if not arg.startswith("-") and "=" not in arg}
    if targets & {"install", "uninstall"}:
        out.add(_C.INSTALL, "make install installs into system locations")
        out.add(_C.OUTSIDE_WRITE, "make install writes outside the project")


PACKAGE_PROGRAMS: Final[Mapping[str, Handler]] = {
    **dict.fromkeys(table_words("dnf zypper pacman apk snap flatpak emerge port apt-get"), _system_package_manager),
    "make": _make, "gmake": _make,
    "pip": _package_manager(_PIP), "npm": _package_manager(_NPM), "yarn": _package_manager(_YARN),
    "pnpm": _package_manager(_PNPM), "bun": _package_manager(_BUN), "uv": _package_manager(_UV),
    "poetry": _package_manager(_POETRY), "pipx": _package_manager(_PIPX), "conda": _package_manager(_CONDA),
    "cargo": _package_manager(_CARGO), "go": _package_manager(_GO), "gem": _package_manager(_GEM),
    "bundle": _package_manager(_BUNDLE), "composer": _package_manager(_COMPOSER),
    "brew": _package_manager(_BREW), "twine": _package_manager(_TWINE),
}  # fmt: skip
"""Language and system package managers (and make), by name."""
