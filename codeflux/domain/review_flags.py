"""Which paths in a task's diff change what later commands execute, and why — "changes what runs".

An approval covers an exact argv, not the code it runs: ``python3 -m pytest`` allowed once or for the task
runs whatever ``conftest.py``, ``pytest.ini`` or a ``*.pth`` file say at that moment, and accepting a diff
hands the same files to every later ``make``, ``pip install``, ``git checkout`` or commit hook in the
user's checkout. The review therefore lists every changed (added, modified, deleted or retyped) path whose
file name is one of these, with the reason, so a person reads those files first.

Matching is on the last path component, case-insensitively (a case-insensitive file system opens
``Conftest.py`` for ``conftest.py``), in any directory. ``pyproject.toml`` is flagged on every change: its
``[tool.pytest…]``, ``[tool.coverage…]``, ``[build-system]``, ``[project.scripts]`` and
``[project.entry-points]`` tables (and other tools' tables that name commands or plugins) change what runs,
and a diff hunk does not always show which table a line belongs to. ``package.json`` likewise: its
``scripts`` run on ``npm test``, ``npm install`` and friends.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from codeflux.domain.display import escape_for_display

__all__ = ["WhatRunsChange", "changes_what_runs", "what_runs_lines", "what_runs_reason"]

_PYTEST_CONFIG: Final = "pytest reads its options, plugins and test paths from it on every run"

_BY_NAME: Final[dict[str, str]] = {
    "conftest.py": "pytest imports and runs it before the tests in its directory and below",
    "pytest.ini": _PYTEST_CONFIG,
    ".pytest.ini": _PYTEST_CONFIG,
    "pytest.toml": _PYTEST_CONFIG,
    ".pytest.toml": _PYTEST_CONFIG,
    "tox.ini": "tox runs the commands it lists, and pytest reads its [pytest] section",
    "tox.toml": "tox runs the commands it lists",
    "setup.cfg": "pytest reads its [tool:pytest] section, and setuptools its entry points and build options",
    "pyproject.toml": ("test and build configuration: pytest ([tool.pytest…]), coverage ([tool.coverage…]), the "
                       "build backend ([build-system]), scripts and entry points ([project.scripts], "
                       "[project.entry-points]) and other tools' commands and plugins; any change may alter what runs"),
    ".coveragerc": "coverage reads it when the tests run under coverage, and it can load plugins",
    "noxfile.py": "nox runs it as Python",
    "setup.py": "it runs as Python whenever the package is built or installed",
    "sitecustomize.py": "Python imports it at every interpreter start when it is on the module path",
    "usercustomize.py": "Python imports it at every interpreter start when it is on the module path",
    "makefile": "make runs the recipes it holds",
    "gnumakefile": "make runs the recipes it holds",
    ".gitattributes": "it names the filter, diff and merge drivers git runs on checkout, add, diff and merge",
    ".gitmodules": "it names the submodules (their URLs and update commands) git fetches and checks out",
    ".pre-commit-config.yaml": "pre-commit runs the hooks it lists at every commit",
    ".envrc": "direnv runs it as shell code when a shell enters the directory",
    "package.json": "npm and other package managers run its scripts (test, install hooks and others)",
}
_BY_SUFFIX: Final[dict[str, str]] = {
    ".mk": "make runs the recipes it holds wherever a makefile includes it",
    ".pth": "Python's site module runs its 'import' lines at every interpreter start from a site directory",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class WhatRunsChange:
    """A changed path that changes what later commands execute, and why (one safe line)."""

    path: str
    reason: str


def what_runs_reason(path: str) -> str | None:
    """Why a change to ``path`` (a repository-relative path, ``/``-separated) changes what runs, or None."""
    name = path.rstrip("/").rsplit("/", 1)[-1].casefold()
    reason = _BY_NAME.get(name)
    if reason is not None:
        return reason
    for suffix, why in _BY_SUFFIX.items():
        if name.endswith(suffix):
            return why
    return None


def changes_what_runs(paths: Iterable[str]) -> tuple[WhatRunsChange, ...]:
    """The flagged paths among ``paths``, each once, in the order given."""
    flagged: list[WhatRunsChange] = []
    seen: set[str] = set()
    for path in paths:
        reason = what_runs_reason(path)
        if reason is not None and path not in seen:
            seen.add(path)
            flagged.append(WhatRunsChange(path=path, reason=reason))
    return tuple(flagged)


def what_runs_lines(changes: Iterable[WhatRunsChange]) -> tuple[str, ...]:
    """The flags as a terminal shows them: a heading, then one line per path (escaped for display), or nothing."""
    shown = tuple(changes)
    if not shown:
        return ()
    return (f"changes what runs: {len(shown)} file(s) decide what later commands execute; read them first",
            *(f"  changes what runs  {escape_for_display(change.path)}: {change.reason}" for change in shown))
