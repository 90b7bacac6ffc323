"""git.

git subcommands that talk to a remote add ``network`` (scoped to the remote's host when the argv names
it); ``push`` adds ``external-communication``, and forced or deleting pushes ``destructive``. Commands
that change refs, objects or config shared with the user's repository add ``outside-write``; those that
discard work add ``destructive``; config that makes git run programs adds ``privileged``.

Settings given in the argv (``-c``, ``clone -c``, ``git config KEY VALUE``) are read for what they make
git do: a program setting (``core.sshCommand``, ``diff.external``, ``gpg.program``, ``credential.helper``,
``*.textconv``, ``filter.*``, ``merge.*.driver``, ``pager.*`` …) is read as the shell string git runs, a
proxy (``http.proxy``, ``remote.*.proxy``) or a rewritten remote (``url.*.insteadOf``, ``remote.*.url``)
adds ``network``, and settings that load hooks or configuration or allow ``ext::`` remotes
(``core.hooksPath``, ``include.path``, ``protocol.ext.allow``) make the request unknowable, as does a
program setting whose value ``--config-env`` takes from the environment. The programs named by
``rebase --exec``, ``submodule foreach``, ``grep -O``, ``fetch --upload-pack`` … are read as commands.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Final

from codeflux.authority.classify.commands import Command, Handler, run_inner, run_script
from codeflux.authority.classify.findings import Findings
from codeflux.authority.classify.hosts import (
    LOCAL_SCHEMES,
    REMOTE_SPEC,
    host_of,
    normalize_host,
    url_destinations,
    url_host,
    urls_in,
)
from codeflux.authority.classify.options import (
    Parsed,
    option_grammar,
    option_values,
    parse_options,
    short_letters,
)
from codeflux.domain.capabilities import Capability

_C = Capability

_GIT_GLOBAL: Final = option_grammar(
    short_values="Cc",
    long_values="--git-dir --work-tree --namespace --super-prefix --config-env --list-cmds",
)
_GIT_REMOTE_OPTIONS: Final = option_grammar(
    short_values="objc",
    long_values="--depth --branch --origin --reference --reference-if-able --separate-git-dir --template "
    "--config --filter --shallow-since --shallow-exclude --server-option --bundle-uri --upload-pack "
    "--receive-pack --exec --jobs --push-option --repo --deepen --negotiation-tip --refmap "
    "--recurse-submodules-default --ref-format",
    stop_at_operand=False,
)
_GIT_NETWORK: Final = frozenset({"clone", "fetch", "pull", "push", "ls-remote", "fetch-pack", "send-pack",
                                 "http-fetch", "http-push", "svn", "p4", "daemon", "instaweb"})
_GIT_SHARED_STATE: Final = frozenset({"branch", "tag", "update-ref", "symbolic-ref", "notes", "replace",
                                      "stash", "worktree", "gc", "repack", "prune", "maintenance", "reflog",
                                      "pack-refs"})
_GIT_CODE_CONFIG: Final = re.compile(
    r"(?i)(core\.(hookspath|fsmonitor|sshcommand|pager|editor|gitproxy|askpass|attributesfile)|alias\..*|"
    r".*\.command|diff\..*\.textconv|filter\..*|credential\..*|gpg\..*program|sequence\.editor|"
    r"url\..*\.(insteadof|pushinsteadof)|include\..*|includeif\..*|merge\..*\.driver|uploadpack\..*|"
    r"receive\..*|remote\..*\.(uploadpack|receivepack|proxy)|http\..*proxy.*|protocol\..*)"
)


_HARMLESS_GIT_CONFIG: Final = re.compile(
    r"(?i)(color|advice|user|log|format|column|i18n|init|blame|status|grep|commit|tag|branch|pull|rebase)\.[a-z]+|"
    r"core\.(quotepath|autocrlf|abbrev|safecrlf|ignorecase|filemode|longpaths)"
)
_GIT_PROGRAM_SETTING: Final = re.compile(
    r"(?i)core\.(fsmonitor|sshcommand|pager|editor|askpass|gitproxy)|alias\..*|sequence\.editor|.*\.command|"
    r"diff\.external|diff\..*\.textconv|filter\..*\.(clean|smudge|process)|merge\..*\.driver|"
    r"(difftool|mergetool)\..*\.cmd|credential\.helper|credential\..*\.helper|gpg\.program|gpg\..*\.program|"
    r"gpg\.ssh\.defaultkeycommand|pager\..*|uploadpack\.packobjectshook|sendemail\.(sendmailcmd|tocmd|cccmd|headercmd)|"
    r"imap\.tunnel|browser\..*\.(cmd|path)|web\.browser|man\.viewer|man\..*\.(cmd|path)|instaweb\.httpd|"
    r"remote\..*\.(uploadpack|receivepack)"
)
"""Settings whose value is a command git runs (through the shell)."""
_GIT_PROXY_SETTING: Final = re.compile(r"(?i)https?\.proxy|http\..*\.proxy|remote\..*\.proxy")
_GIT_DESTINATION_SETTING: Final = re.compile(r"(?i)url\..*\.(insteadof|pushinsteadof)|remote\..*\.(url|pushurl)")
_GIT_LOADING_SETTING: Final = re.compile(
    r"(?i)include\.path|includeif\..*\.path|core\.hookspath|protocol\.allow|protocol\.ext\.allow|init\.templatedir"
)
"""Settings that make git load hooks or configuration from elsewhere, or allow ``ext::`` remotes (which run a
command); ``protocol.file.allow`` and the like only widen where git may fetch from."""
_DISABLING_VALUES: Final = frozenset({"", "/dev/null", "never"})


def _read_git_setting(key: str, value: str | None, command: Command, out: Findings, *, loads: bool = True) -> None:
    """What one setting given in the argv makes git do; ``value`` is None when it comes from the environment.

    ``loads=False`` leaves out the settings that load hooks or configuration (``git config`` writing them
    already needs ``privileged`` + ``outside-write``, and runs nothing itself).
    """
    if _GIT_PROGRAM_SETTING.fullmatch(key):
        if value is None:
            out.unknowable(f"git setting {key} names a program codeflux cannot see (--config-env)")
        elif value:
            run_script(_setting_command(key.lower(), value), command, out)
    elif _GIT_PROXY_SETTING.fullmatch(key):
        if value != "":
            out.network(f"git setting {key} routes traffic through a proxy",
                        [host_of(value, bare_names=True) if value else None])
    elif _GIT_DESTINATION_SETTING.fullmatch(key):
        destination = key[len("url.") : key.rindex(".")] if key.lower().startswith("url.") else value
        host, networked = _git_remote_destination(destination)
        if networked:
            out.network(f"git setting {key} points git at another remote", [host])
    elif loads and _GIT_LOADING_SETTING.fullmatch(key) and value not in _DISABLING_VALUES:
        out.unknowable(f"git setting {key} makes git load hooks, configuration or transports codeflux does not read")


def _setting_command(key: str, value: str) -> str:
    """The shell string a program setting runs: ``!`` aliases and helpers are shell, others git commands."""
    if value.startswith("!"):
        return value[1:]
    if key.startswith("alias."):
        return f"git {value}"
    if key.startswith("credential.") and not value.startswith("/"):
        return f"git credential-{value}"
    return value


_GitHandler = Callable[[str, tuple[str, ...], Command, Findings], None]
"""A git subcommand's reader: the subcommand, its arguments (a tuple, so that mypy's strict equality
rejects comparing them with a list), the git command and the findings."""


def _git_remote_destination(word: str | None) -> tuple[str | None, bool]:
    """(host, is_network) of a git remote operand: a URL, ``[user@]host:path``, a path or a name."""
    if word is None:
        return None, True
    if "://" in word:
        if word.split("://", 1)[0].lower() in LOCAL_SCHEMES:
            return None, False
        return url_host(word), True
    if word.startswith(("/", "./", "../", "~")) or word in {".", ".."}:
        return None, False
    match = REMOTE_SPEC.fullmatch(word)
    if match is not None and "/" not in word.split(":", 1)[0]:
        return normalize_host(match.group(1), bare_names=True), True
    return None, True  # a remote name: its URL lives in config


def _git(command: Command, out: Findings) -> None:
    parsed = parse_options(command.args, _GIT_GLOBAL)
    if parsed is None:
        out.unknowable("git has options codeflux cannot read")
        return
    risky = [setting for setting in parsed.values("-c") if not _HARMLESS_GIT_CONFIG.fullmatch(setting.split("=")[0])]
    if risky or parsed.has("--config-env") or any(name == "--exec-path" and value for name, value in parsed.options):
        out.add(_C.PRIVILEGED, "git -c/--config-env/--exec-path can make git run programs or redirect traffic")
    for setting in parsed.values("-c"):
        key, assigned, value = setting.partition("=")
        _read_git_setting(key, value if assigned else "true", command, out)
    for setting in parsed.values("--config-env"):
        _read_git_setting(setting.partition("=")[0], None, command, out)
    if not parsed.operands:
        return
    sub, args = parsed.operands[0], parsed.operands[1:]
    handler = _GIT_SUBCOMMANDS.get(sub)
    if handler is not None:
        handler(sub, args, command, out)
    elif sub.startswith("credential"):
        out.add(_C.CREDENTIAL, f"git {sub} reads or stores credentials")
    elif sub in _GIT_NETWORK:
        _git_network(sub, args, command, out)
    elif sub in _GIT_SHARED_STATE:
        _git_shared_state(sub, args, command, out)


def _git_network(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    parsed = parse_options(args, _GIT_REMOTE_OPTIONS) or Parsed(options=(), operands=tuple(args))
    operands = list(parsed.operands)
    host, networked = _git_remote_destination(operands[0] if operands else None)
    extra = url_destinations(urls_in(operands[1:]), out) if sub == "clone" else []
    if networked:
        out.network(f"git {sub} talks to a remote repository", [host, *extra])
    if any(operand.lower().startswith(("ext::", "fd::")) for operand in operands):
        out.unknowable(f"git {sub} is given an ext:: or fd:: remote, which runs a command or uses a descriptor")
    programs = parsed.values("--upload-pack", "--receive-pack", "--exec")
    if sub == "clone":
        programs += option_values(args, short="u", value_letters="objc")
    for program in programs:
        run_script(program, command, out)
    for setting in parsed.values("-c", "--config"):
        key, _, value = setting.partition("=")
        _read_git_setting(key, value, command, out)
    runs_program = parsed.has("--upload-pack", "--receive-pack", "--exec", "--template", "-c", "--config")
    if runs_program or (sub == "clone" and parsed.has("-u")):
        out.add(_C.PRIVILEGED, f"git {sub} is told to run a program or apply config")
    if sub == "push":
        out.add(_C.EXTERNAL_COMMUNICATION, "git push publishes commits to a shared remote")
        forced = parsed.has("-f", "--force", "--force-with-lease", "--force-if-includes", "--mirror",
                            "--delete", "-d", "--prune")
        if forced or any(spec.startswith(("+", ":")) for spec in operands[1:]):
            out.add(_C.DESTRUCTIVE, "git push rewrites or deletes history on the remote")
    if sub in {"daemon", "instaweb"}:
        out.add(_C.PROCESS, f"git {sub} serves the repository")


def _git_shared_state(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    listing_words = {"-l", "--list", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--show-current", "list", "show"}
    listing = (not args and sub != "stash") or (bool(args) and all(arg in listing_words for arg in args))
    if sub in {"branch", "tag", "stash", "worktree", "notes", "reflog"} and listing:
        return
    out.add(_C.OUTSIDE_WRITE, f"git {sub} changes refs or objects shared with the user's repository")
    deleting = {"-d", "-D", "--delete", "drop", "clear", "remove", "prune", "expire", "delete", "-f", "--force"}
    clustered = set(short_letters(args)) & {"d", "D", "f"}  # `branch -dr`, `tag -fa`
    if sub == "prune" or deleting & set(args) or clustered or any(a.startswith("--prune") for a in args):
        out.add(_C.DESTRUCTIVE, f"git {sub} deletes refs, objects or worktrees")


def _git_destructive_when(flags: frozenset[str], reason: str, *, always: bool = False) -> _GitHandler:
    def handle(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
        if always or flags & set(args) or any(arg.split("=")[0] in flags for arg in args):
            out.add(_C.DESTRUCTIVE, f"git {sub} {reason}")

    return handle


_GIT_CLEAN: Final = option_grammar(short_values="e", long_values="--exclude", stop_at_operand=False)
_GIT_CHECKOUT: Final = option_grammar(short_values="bBcC", long_values="--orphan --conflict", stop_at_operand=False)


def _git_clean(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    parsed = parse_options(args, _GIT_CLEAN)  # `-fen` excludes the pattern "n": it is not a dry run
    if parsed is None or not parsed.has("-n", "--dry-run"):
        out.add(_C.DESTRUCTIVE, "git clean deletes untracked files for good")


def _git_checkout(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    parsed = parse_options(args, _GIT_CHECKOUT) or Parsed(options=(), operands=())
    forced = parsed.has("-f", "--force", "--discard-changes", "-p", "--patch")
    if forced or {"--", "."} & set(args):
        out.add(_C.DESTRUCTIVE, f"git {sub} overwrites uncommitted changes")


def _git_restore(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    staged_only = bool({"-S", "--staged"} & set(args)) and not {"-W", "--worktree"} & set(args)
    if not staged_only:
        out.add(_C.DESTRUCTIVE, "git restore overwrites uncommitted changes")


def _git_config(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    reading = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "get", "list"}
    keys = [arg for arg in args if not arg.startswith("-")]
    if any("credential" in key.lower() or "token" in key.lower() or "password" in key.lower() for key in keys):
        out.add(_C.CREDENTIAL, "git config touches a credential setting")
    if reading & set(args):
        return
    out.add(_C.OUTSIDE_WRITE, "git config writes configuration shared with the user's repository")
    if any(pattern.fullmatch(key) for key in keys for pattern in _RUNNING_CONFIG):
        out.add(_C.PRIVILEGED, "git config sets a key that makes git run programs or redirect traffic")
    for index, key in enumerate(args[:-1]):
        if "." in key and not key.startswith("-"):
            _read_git_setting(key, args[index + 1], command, out, loads=False)


_GIT_REMOTE_ADD: Final = option_grammar(short_values="tm", long_values="--track --master", stop_at_operand=False)


def _git_remote(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    action = next((arg for arg in args if not arg.startswith("-")), None)
    if action in {"add", "remove", "rm", "rename", "set-url", "set-branches", "set-head"}:
        out.add(_C.OUTSIDE_WRITE, f"git remote {action} edits remotes shared with the user's repository")
        parsed = parse_options(args[args.index(action) + 1 :], _GIT_REMOTE_ADD) or Parsed(options=(), operands=())
        for url in parsed.operands[1:]:
            host, networked = _git_remote_destination(url)
            if networked and action in {"add", "set-url"} and parsed.has("-f", "--fetch"):  # also `-ft main`
                out.network("git remote add -f fetches", [host])
    elif action in {"update", "prune"} or (action == "show" and "-n" not in args):
        out.network(f"git remote {action} contacts the remote", [None])


def _git_submodule(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    operands = [arg for arg in args if not arg.startswith("-")]
    action = operands[0] if operands else "status"
    if action == "foreach":
        rest = list(args[args.index("foreach") + 1 :])
        while rest and rest[0].startswith("-"):  # foreach's own --recursive, -q, --quiet and --
            ended, rest = rest[0] == "--", rest[1:]
            if ended:
                break
        run_script(" ".join(rest), command, out)
    elif action == "add":
        host, networked = _git_remote_destination(operands[1] if len(operands) > 1 else None)
        if networked:
            out.network("git submodule add clones a repository", [host])
    elif action in {"update", "sync", "init"} and "--no-fetch" not in args:
        out.network(f"git submodule {action} may fetch submodules", [None])


def _git_lfs(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    action = args[0] if args else ""
    if action in {"install", "update"}:
        out.add(_C.PRIVILEGED, "git lfs install writes repository hooks")
        out.add(_C.OUTSIDE_WRITE, "git lfs install changes git configuration")
    elif action in {"fetch", "pull", "push", "clone", "checkout", "fsck", "prune", "migrate"}:
        out.network(f"git lfs {action} talks to the LFS server", [None])


def _git_send_email(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    out.network("git send-email sends mail", [None])
    out.add(_C.EXTERNAL_COMMUNICATION, "git send-email sends patches by mail")


def _git_exec_option(short: str, *long: str) -> _GitHandler:
    """rebase --exec, difftool --extcmd …: the option's value (in any spelling) is a shell string git runs."""

    def handle(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
        for script in option_values(args, short=short, long=long):
            run_script(script, command, out)

    return handle


def _git_bisect(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    if len(args) > 1 and args[0] == "run":
        run_inner(args[1:], command, out)


_GIT_GREP_VALUE_LETTERS: Final = "efABCm"  # short options that take a value (-O takes one only attached)


def _git_grep(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    """``-O[PAGER]``/``--open-files-in-pager[=PAGER]`` runs the pager on the matching files."""
    pagers = option_values(args, short="O", long=("--open-files-in-pager",), value_letters=_GIT_GREP_VALUE_LETTERS,
                           attached_only=True)
    for pager in pagers:
        if pager:
            run_script(pager, command, out)
        else:
            out.unknowable("git grep -O runs the configured pager, which codeflux does not read")


def _git_hook(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    out.add(_C.PRIVILEGED, "git hook runs repository hooks")


def _git_archive(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    for remote in option_values(args, long=("--remote",)):
        out.network("git archive --remote fetches from a remote", [_git_remote_destination(remote)[0]])


def _git_filter(sub: str, args: tuple[str, ...], command: Command, out: Findings) -> None:
    out.add(_C.DESTRUCTIVE, f"git {sub} rewrites history")
    out.add(_C.OUTSIDE_WRITE, f"git {sub} rewrites refs shared with the user's repository")
    out.unknowable(f"git {sub} runs shell snippets codeflux does not read")


_RUNNING_CONFIG: Final = (_GIT_CODE_CONFIG, _GIT_PROGRAM_SETTING, _GIT_LOADING_SETTING)

_GIT_SUBCOMMANDS: Final[Mapping[str, _GitHandler]] = {
    "reset": _git_destructive_when(frozenset({"--hard", "--merge", "--keep"}), "discards uncommitted work"),
    "clean": _git_clean,
    "checkout": _git_checkout,
    "switch": _git_checkout,
    "restore": _git_restore,
    "config": _git_config,
    "remote": _git_remote,
    "submodule": _git_submodule,
    "lfs": _git_lfs,
    "send-email": _git_send_email,
    "rebase": _git_exec_option("x", "--exec"),
    "difftool": _git_exec_option("x", "--extcmd"),
    "mergetool": _git_exec_option("", "--tool-cmd"),
    "bisect": _git_bisect,
    "hook": _git_hook,
    "grep": _git_grep,
    "archive": _git_archive,
    "filter-branch": _git_filter,
    "filter-repo": _git_filter,
}


GIT_PROGRAMS: Final[Mapping[str, Handler]] = {"git": _git}
"""git, by name (the code-hosting CLIs are in :mod:`~codeflux.authority.classify.forges`)."""
