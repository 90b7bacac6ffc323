"""The program table: every program codeflux knows, mapped to the handler that reads its argv.

The families live beside this module (wrappers, launchers, network, git, forges, packages, interpreters,
archives, side doors); the programs whose need does not depend on their arguments are listed here by
what they need (credential, privileged, destructive, messaging), with the few small readers that fit no
family (``rm``, ``chmod``, ``docker``, ``export``). A program missing from the table needs ``process``
plus what :mod:`~codeflux.authority.classify.unknown` finds in its arguments (the table's
:data:`~codeflux.authority.classify.commands.UNKNOWN_PROGRAM` entry).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from codeflux.authority.classify.archives import ARCHIVE_PROGRAMS
from codeflux.authority.classify.commands import UNKNOWN_PROGRAM, Command, Handler, classify_assignment
from codeflux.authority.classify.findings import Findings
from codeflux.authority.classify.forges import FORGE_PROGRAMS
from codeflux.authority.classify.git import GIT_PROGRAMS
from codeflux.authority.classify.hosts import host_of
from codeflux.authority.classify.interpreters import INTERPRETER_PROGRAMS
from codeflux.authority.classify.launchers import LAUNCHER_PROGRAMS
from codeflux.authority.classify.network import NETWORK_PROGRAMS
from codeflux.authority.classify.options import option_grammar, parse_options, table_words
from codeflux.authority.classify.packages import PACKAGE_PROGRAMS
from codeflux.authority.classify.shell import ASSIGNMENT
from codeflux.authority.classify.sidedoors import SIDE_DOOR_PROGRAMS
from codeflux.authority.classify.unknown import read_unknown_program
from codeflux.authority.classify.wrappers import WRAPPER_PROGRAMS
from codeflux.domain.capabilities import Capability

_C = Capability

_CREDENTIAL_TOOLS: Final = "ssh-add ssh-keygen gpg gpg-agent security keyring secret-tool pass " \
    "gopass op bw lpass keychain kinit klist printenv git-credential-store git-credential-cache"
_PRIVILEGED_TOOLS: Final = "pkexec mount umount losetup insmod rmmod modprobe sysctl iptables ip6tables nft ufw " \
    "setcap systemctl service launchctl shutdown reboot halt poweroff init telinit useradd usermod userdel " \
    "groupadd groupdel visudo ldconfig dpkg rpm passwd chpasswd"
_DESTRUCTIVE_TOOLS: Final = "shred dd wipefs fdisk sfdisk cfdisk parted gdisk sgdisk truncate srm wipe kill " \
    "pkill killall blkdiscard mke2fs"
_MESSAGING_TOOLS: Final = "mail mailx sendmail mutt neomutt msmtp ssmtp swaks slack slack-cli slackcat " \
    "telegram-send wall write"
_RUNNERS: Final = "parallel gdb lldb nsenter firejail bwrap proot tmux screen dtach expect-lite sem " \
    "entr at batch crontab systemd-run vi vim nvim gvim ex view emacs ed"


_DOCKER_GLOBAL: Final = option_grammar(
    short_values="Hclna", long_values="--host --url --context --connection --config --log-level --tlscacert "
    "--tlscert --tlskey --identity --root --runroot --runtime --storage-driver --storage-opt --cgroup-manager "
    "--conmon --tmpdir --events-backend --hooks-dir --module --ssh --address --namespace --snapshotter --data-root",
)
_LOCAL_ENGINE: Final = ("unix://", "fd://", "npipe://")


def _docker(command: Command, out: Findings) -> None:
    out.add(_C.PRIVILEGED, f"{command.program} controls the container engine (root-equivalent)")
    parsed = parse_options(command.args, _DOCKER_GLOBAL)  # `--context prod run`: prod is no subcommand
    sub = parsed.operands[0] if parsed is not None and parsed.operands else ""
    for engine in parsed.values("-H", "--host", "--url") if parsed is not None else ():
        if not engine.startswith(_LOCAL_ENGINE):
            out.network(f"{command.program} -H talks to a remote engine", [host_of(engine, bare_names=True)])
    if sub in {"pull", "push", "run", "build", "login", "search", "create", "compose", "buildx", "image",
               "logout", "manifest", "trust", "plugin"}:
        out.network(f"{command.program} {sub} may contact a registry", [None])
    if sub in {"login", "logout", "secret"}:
        out.add(_C.CREDENTIAL, f"{command.program} {sub} handles registry credentials")
    if sub == "push":
        out.add(_C.EXTERNAL_COMMUNICATION, f"{command.program} push publishes an image")


def _rm(command: Command, out: Findings) -> None:
    flags = "".join(arg[1:] for arg in command.args if arg.startswith("-") and not arg.startswith("--"))
    longs = {arg for arg in command.args if arg.startswith("--")}
    if set(flags) & {"r", "R", "f"} or longs & {"--recursive", "--force", "--no-preserve-root"}:
        out.add(_C.DESTRUCTIVE, "rm -r/-f deletes files and trees without asking")


def _recursive_owner_or_mode(command: Command, out: Findings) -> None:
    if any(arg in {"-R", "--recursive"} or (arg.startswith("-") and "R" in arg and not arg.startswith("--"))
           for arg in command.args):
        out.add(_C.DESTRUCTIVE, f"{command.program} -R changes a whole tree")
    if command.program == "chmod" and any(
        re.fullmatch(r"[ugoa]*[+=][rwxXt]*s[rwxXst]*", arg) or re.fullmatch(r"[2-7][0-7]{3}", arg)
        for arg in command.args
    ):
        out.add(_C.PRIVILEGED, "chmod sets a setuid/setgid bit")


def _listing_shell_state(command: Command, out: Findings) -> None:
    """export / declare / typeset / set / readonly with no names print variables (secrets too)."""
    listing_flags = set() if command.program == "set" else {"-p", "-x", "-px", "-xp", "-g"}
    if all(arg in listing_flags for arg in command.args):
        out.add(_C.CREDENTIAL, f"{command.program} without names prints environment variables")
        return
    for arg in command.args:
        if ASSIGNMENT.match(arg):
            name, _, value = arg.partition("=")
            classify_assignment(name.rstrip("+"), value, out)


def _fixed(*capabilities: Capability, reason: str) -> Handler:
    def handle(command: Command, out: Findings) -> None:
        out.add_all(capabilities, f"{command.program} {reason}")

    return handle


def _runner(command: Command, out: Findings) -> None:
    out.unknowable(f"{command.program} runs commands in a way codeflux does not read")


_READS_SECRETS: Final = _fixed(_C.CREDENTIAL, reason="reads or manages keys, passwords or the environment")
_CHANGES_SYSTEM: Final = _fixed(_C.PRIVILEGED, reason="changes the system or runs with other privileges")
_DESTROYS: Final = _fixed(_C.DESTRUCTIVE, reason="destroys data or stops processes")
_SENDS_MESSAGES: Final = _fixed(_C.NETWORK, _C.EXTERNAL_COMMUNICATION, reason="sends messages to people")

PROGRAMS: Final[Mapping[str, Handler]] = {
    **dict.fromkeys(table_words(_CREDENTIAL_TOOLS), _READS_SECRETS),
    **dict.fromkeys(table_words(_PRIVILEGED_TOOLS), _CHANGES_SYSTEM),
    **dict.fromkeys(table_words(_DESTRUCTIVE_TOOLS), _DESTROYS),
    **dict.fromkeys(table_words(_MESSAGING_TOOLS), _SENDS_MESSAGES),
    **dict.fromkeys(table_words(_RUNNERS), _runner),
    **dict.fromkeys(table_words("export declare typeset readonly local set"), _listing_shell_state),
    **dict.fromkeys(table_words("chmod chown chgrp"), _recursive_owner_or_mode),
    "rm": _rm,
    "docker": _docker,
    "npx": _fixed(_C.NETWORK, _C.INSTALL, reason="downloads and runs a package"),
    "easy_install": _fixed(_C.NETWORK, _C.INSTALL, reason="downloads and installs packages"),
    **NETWORK_PROGRAMS,
    **GIT_PROGRAMS,
    **FORGE_PROGRAMS,
    **PACKAGE_PROGRAMS,
    **INTERPRETER_PROGRAMS,
    **ARCHIVE_PROGRAMS,
    **SIDE_DOOR_PROGRAMS,
    **LAUNCHER_PROGRAMS,
    **WRAPPER_PROGRAMS,  # last: pkexec is also a privileged tool, and reading through it to its command wins
    UNKNOWN_PROGRAM: read_unknown_program,
}
"""Every program codeflux knows, by normalized name (see ``commands``: paths, ``.exe``, versions, aliases)."""
