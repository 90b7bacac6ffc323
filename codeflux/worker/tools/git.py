"""``inspect_diff``, ``git_status`` and ``git_log``, and the one way the worker runs git.

git runs argv-only, in its own process group (killed when it ends), with a scrubbed environment —
``GIT_CONFIG_NOSYSTEM=1``, ``GIT_CONFIG_GLOBAL=/dev/null``, ``GIT_TERMINAL_PROMPT=0``, literal pathspecs,
discovery stopped at the worktree (``GIT_CEILING_DIRECTORIES``) — and with
``-c core.hooksPath=/dev/null -c core.fsmonitor=false -c protocol.allow=never``, so no repository hook,
fsmonitor program, external diff, text conversion or network transport ever runs.

Filter drivers are switched off too. The repository's configuration (its common ``.git/config``, shared
by the task worktree) may define ``filter.<name>.clean``/``smudge``/``process`` programs, and a
``.gitattributes`` the task writes (``* filter=<name>``) would make ``git status``/``git diff`` run
them. Before every tool call's git runs the configured names are listed with ``git config --get-regexp`` (which
runs nothing) and each gets ``-c filter.<name>.clean= -c filter.<name>.smudge= -c
filter.<name>.process= -c filter.<name>.required=false``. The list is read again for every tool call, not
cached across tool calls: the configuration can change between them, and a listing costs one short
(boxed) git process; the runs of one tool call (``inspect_diff`` runs git twice) share one listing. A name
git's ``-c`` cannot express (one holding ``=``) or a listing that cannot be read stops the tool instead.
A submodule's own configuration is not in that list, so ``git status`` and ``git diff`` run with
``--ignore-submodules=dirty``: they compare a submodule's commit but never start git inside it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from codeflux.domain.errors import CodefluxError, ToolFailedError
from codeflux.domain.execution import FailureKind
from codeflux.domain.git_options import SAFE_GIT_OPTIONS
from codeflux.domain.tools import BoundToolRequest
from codeflux.worker.paths import resolve_worktree_path
from codeflux.worker.tools.arguments import integer_argument, text_argument
from codeflux.worker.tools.beneath import read_file_beneath
from codeflux.worker.tools.context import ToolContext
from codeflux.worker.tools.pump import OutputCapture, PumpEnd, pump_process
from codeflux.worker.tools.results import ToolResult, head_within, succeeded_result

__all__ = ["GitRun", "current_filter_overrides", "filter_names_in_listing", "filter_overrides", "git_log",
           "git_status", "inspect_diff", "run_git"]

GIT_OPTIONS: Final = SAFE_GIT_OPTIONS
_FILTER_LISTING: Final = ("config", "-z", "--get-regexp", r"^filter\.")
_FILTER_DRIVERS: Final = ("clean", "smudge", "process")
_STDERR_LIMIT: Final = 16 * 1024
_STDOUT_FLOOR: Final = 4 * 1024 * 1024
"""git's output is read up to this (or the output cap, if larger): a diff is cut for the model afterwards,
with the files it did not show named."""
_MAX_UNTRACKED_SHOWN: Final = 200
_DEFAULT_LOG_COUNT: Final = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class GitRun:
    returncode: int
    stdout: str
    stderr: str
    stdout_truncated: bool

    def first_error_line(self) -> str:
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return lines[0][:300] if lines else f"git exited with code {self.returncode}"


def run_git(context: ToolContext, arguments: Sequence[str], *, stdin: bytes = b"",
            overrides: Sequence[str] | None = None) -> GitRun:
    """Run ``git <GIT_OPTIONS> <filter overrides> arguments…`` in the worktree; raise on timeout, cancel or
    no git, and when the configured filter drivers cannot be listed (see the module docstring).
    ``overrides``: :func:`current_filter_overrides` already read for this tool call (one listing per call)."""
    chosen = current_filter_overrides(context) if overrides is None else overrides
    return _run_git_process(context, [*chosen, *arguments], stdin=stdin)


def current_filter_overrides(context: ToolContext) -> list[str]:
    """The ``-c`` options that switch off every filter driver the repository configures now."""
    return filter_overrides(_configured_filter_names(context))


def filter_overrides(names: Sequence[str]) -> list[str]:
    """``-c`` options that switch off every driver of each filter in ``names`` (and its ``required``)."""
    options: list[str] = []
    for name in names:
        # '=' ends a -c key; U+FFFD stands for bytes that were not UTF-8, so the real name is unknown.
        if "=" in name or "\ufffd" in name or "\n" in name or "\x00" in name:
            raise ToolFailedError(failure_kind=FailureKind.GIT_FAILED,
                                  message="the repository configures a filter whose name git cannot switch off")
        for driver in _FILTER_DRIVERS:
            options += ["-c", f"filter.{name}.{driver}="]
        options += ["-c", f"filter.{name}.required=false"]
    return options


def filter_names_in_listing(listing: str) -> tuple[str, ...]:
    """The filter names in ``git config -z --get-regexp '^filter\\.'`` output, in order, each once.

    Records are ``key\\nvalue\\0`` (``key\\0`` for a key without a value); a key is
    ``filter.<name>.<variable>`` where the name (a subsection) may hold dots, spaces and any case.
    """
    names: dict[str, None] = {}
    for record in listing.split("\x00"):
        key = record.split("\n", 1)[0]
        section, _, rest = key.partition(".")
        name, dot, _variable = rest.rpartition(".")
        if section.lower() == "filter" and dot and name:
            names[name] = None
    return tuple(names)


def _configured_filter_names(context: ToolContext) -> tuple[str, ...]:
    listing = _run_git_process(context, _FILTER_LISTING)
    if listing.returncode == 1 and not listing.stdout:
        return ()  # no key matched
    if listing.returncode != 0 or listing.stdout_truncated:
        raise ToolFailedError(failure_kind=FailureKind.GIT_FAILED,
                              message=f"the repository configuration cannot be read: {listing.first_error_line()}")
    return filter_names_in_listing(listing.stdout)


def _run_git_process(context: ToolContext, arguments: Sequence[str], *, stdin: bytes = b"") -> GitRun:
    environment = _git_environment(context)
    git = shutil.which("git", path=environment["PATH"])
    if git is None:
        raise ToolFailedError(failure_kind=FailureKind.GIT_FAILED, message="git is not installed")
    stdout = OutputCapture(limit=max(context.limits.max_output_bytes, _STDOUT_FLOOR), redact=False)
    stderr = OutputCapture(limit=_STDERR_LIMIT, redact=False)
    try:
        boxed, executable = context.confinement.command([git, *GIT_OPTIONS, *arguments], executable=git,
                                                        network=False)
        process = context.processes.spawn(boxed, executable=executable, cwd=context.worktree,
                                          env=context.confinement.environment(environment),
                                          stdin_piped=bool(stdin))
    except OSError:
        raise ToolFailedError(failure_kind=FailureKind.GIT_FAILED, message="git could not be started") from None
    texts: dict[str, list[str]] = {"stdout": [], "stderr": []}
    try:
        pumping = pump_process(process, stdin=stdin, context=context, stdout=stdout, stderr=stderr)
        while True:
            try:
                name, text = next(pumping)
            except StopIteration as stop:
                end: PumpEnd = stop.value
                break
            texts[name].append(text)
    finally:
        returncode = context.processes.finish(process)
    if end is PumpEnd.TIMED_OUT:
        raise ToolFailedError(failure_kind=FailureKind.TIMED_OUT, message="git ran past the time limit")
    if end is PumpEnd.CANCELLED:
        raise ToolFailedError(failure_kind=FailureKind.CANCELLED, message="cancelled")
    return GitRun(returncode=returncode, stdout="".join(texts["stdout"]), stderr="".join(texts["stderr"]),
                  stdout_truncated=stdout.truncated)


def _git_environment(context: ToolContext) -> dict[str, str]:
    environment = {name: context.environment[name] for name in ("PATH", "HOME", "TMPDIR")
                   if name in context.environment}
    environment.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    environment.update({
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_CEILING_DIRECTORIES": str(context.worktree.parent),
        "GIT_PAGER": "cat",
    })  # fmt: skip
    return environment


def _pathspec(context: ToolContext, request: BoundToolRequest) -> list[str]:
    relative = text_argument(request, "path")
    if relative is None:
        return []
    resolved = resolve_worktree_path(context.worktree, relative, must_exist=False)
    return ["--", "/".join(resolved.relative_to(context.worktree).parts)]


def _checked(run: GitRun) -> GitRun:
    if run.returncode != 0:
        raise ToolFailedError(failure_kind=FailureKind.GIT_FAILED, message=run.first_error_line())
    return run


def inspect_diff(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """The worktree's changes against the task's base commit (HEAD if none), untracked files included.

    A diff over the output cap shows its head and names the files it did not show (wholly or partly), so
    the model can ask for one with ``path``."""
    base = context.base_commit or "HEAD"
    pathspec = _pathspec(context, request)
    overrides = current_filter_overrides(context)  # one listing for both git runs of this call
    tracked = _checked(run_git(context, ["diff", "--no-ext-diff", "--no-textconv", "--no-color",
                                         "--ignore-submodules=dirty", "--find-renames", base,
                                         *(pathspec or ["--"])], overrides=overrides))
    listing = _checked(run_git(context, ["ls-files", "--others", "--exclude-standard", "-z",
                                         *(pathspec or ["--"])], overrides=overrides))
    untracked = [name for name in listing.stdout.split("\x00") if name]
    parts = [tracked.stdout, *(_new_file_diff(context, name) for name in untracked[:_MAX_UNTRACKED_SHOWN])]
    changed = tracked.stdout.count("diff --git ") + len(untracked)
    message = f"{changed} files differ from {'HEAD' if base == 'HEAD' else base[:12]}"
    if len(untracked) > _MAX_UNTRACKED_SHOWN:
        message += f" ({len(untracked) - _MAX_UNTRACKED_SHOWN} untracked files not shown)"
    if tracked.stdout_truncated:
        message += " (git's output was cut: ask for one path at a time)"
    diff = "".join(parts)
    content, cut = head_within(diff, context.limits.max_output_bytes, hint=lambda head: _unshown_files(diff, head),
                               hint_room=_HINT_BYTES)
    if cut:
        message += "; the diff is longer than the output limit: its head is shown (call with path= for one file)"
    return succeeded_result(message, content=content, max_bytes=context.limits.max_output_bytes)


_HINT_BYTES: Final = 1600
_DIFF_HEADER: Final = re.compile(r"^diff --git a/(.*?) b/", flags=re.MULTILINE)


def _unshown_files(diff: str, head: str) -> str:
    """Which files of ``diff`` its kept ``head`` does not show whole, and how to see one (≤ _HINT_BYTES)."""
    starts = [(found.start(), found.group(1)) for found in _DIFF_HEADER.finditer(diff)]
    unshown = [name for index, (start, name) in enumerate(starts)
               if (starts[index + 1][0] if index + 1 < len(starts) else len(diff)) > len(head)]
    listed: list[str] = []
    used = 0
    for name in unshown:
        used += len(name.encode("utf-8")) + 2
        if used > _HINT_BYTES - 200:
            listed.append(f"and {len(unshown) - len(listed)} more")
            break
        listed.append(name)
    return f"not shown whole: {', '.join(listed)}; call inspect_diff with path=<one of them> to see its diff"


def _new_file_diff(context: ToolContext, relative: str) -> str:
    header = f"diff --git a/{relative} b/{relative}\n"
    try:
        file = read_file_beneath(context.worktree, relative.split("/"), max_bytes=context.limits.max_file_bytes)
    except (CodefluxError, OSError):  # too large, a symlink (never followed), gone since listed
        return header + "new file (content not shown: too large, a symbolic link or not a regular file)\n"
    header += f"new file mode {'100755' if file.mode & 0o111 else '100644'}\n"
    data = file.data
    if b"\x00" in data:
        return header + f"Binary file {relative} added\n"
    lines = data.decode("utf-8", errors="replace").splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return header + f"--- /dev/null\n+++ b/{relative}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def git_status(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """``git status`` in porcelain v1 form with the branch line, every untracked file listed."""
    run = _checked(run_git(context, ["status", "--porcelain=v1", "--branch", "--untracked-files=all",
                                     "--ignore-submodules=dirty"]))
    changes = max(len(run.stdout.splitlines()) - 1, 0)
    content, _ = head_within(run.stdout, context.limits.max_output_bytes,
                             hint="git_status takes no path: call inspect_diff with path= to look at one part")
    return succeeded_result(f"{changes} changed or untracked paths", content=content,
                            max_bytes=context.limits.max_output_bytes)


def git_log(request: BoundToolRequest, context: ToolContext) -> ToolResult:
    """The most recent commits (hash, date, author, subject), optionally only those touching ``path``."""
    count = integer_argument(request, "max_count") or _DEFAULT_LOG_COUNT
    run = _checked(run_git(context, ["log", f"--max-count={count}", "--date=iso-strict",
                                     "--format=%H %ad %an%n    %s", *_pathspec(context, request)]))
    commits = run.stdout.count("\n    ")
    content, _ = head_within(run.stdout, context.limits.max_output_bytes,
                             hint="call git_log with a smaller max_count or a path")
    return succeeded_result(f"{commits} commits", content=content, max_bytes=context.limits.max_output_bytes)
