"""Stage 26's import check: every changed module is imported once, in the task's box, with the repository's
environment — so a change adding an import that cannot be resolved fails assembly even when no test imports
that module.

Which modules: each added or changed ``.py`` file of the diff as its dotted module name (``pkg/calc.py`` →
``pkg.calc``, ``src/pkg/x.py`` → ``pkg.x`` when ``src`` is not itself a package), except test files,
``conftest.py``, ``setup.py`` and ``__main__.py`` (importing those runs a program, or pytest covers them) and
paths that are not importable names. They are imported by one command — the test command's interpreter
running :data:`IMPORT_SCRIPT` with the module names — as the pipeline's own request, started in the worktree.
Its authority follows the decision on the test command this attempt (the same program; importing the
repository's modules is part of what the test command does in the same box): when that was not allowed, the
imports are not checked and the stage says so, never that they were.

The script puts ``src`` first on ``sys.path`` for a src layout (a ``src`` folder that is not itself a package),
so the worktree's code is imported, not an installed copy. A changed module that fails to import is then
imported once on the base revision too (the base copy, :mod:`~codeflux.pipeline.base_revision`): one that
fails there the same way was already broken — it is listed, never held against the change.

The script prints one line ``codeflux-imports <json>`` last: per module ``null`` (imported) or the exception's
type, message (cut) and the last frame of its traceback (file and line). That output comes from a process
running repository code — it is read as untrusted data, bounded, and only ever shown, never followed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from codeflux.gitwork.base_scratch import remove_base_scratch, write_base_scratch
from codeflux.pipeline.base_revision import BASE_DIRECTORY, BASE_WORKING_DIRECTORY, is_test_file
from codeflux.pipeline.ports import PipelinePorts

__all__ = ["IMPORT_SCRIPT", "ImportCheck", "changed_modules", "check_imports", "failing_on_base_too"]

MAX_MODULES: Final = 200
_MARKER: Final = "codeflux-imports "
_NEVER_IMPORTED: Final = frozenset({"conftest.py", "setup.py", "__main__.py"})
IMPORT_SCRIPT: Final = (
    "import importlib, json, os, sys, traceback\n"
    "if os.path.isdir('src') and not os.path.exists(os.path.join('src', '__init__.py')):\n"
    "    sys.path.insert(0, os.path.abspath('src'))\n"
    "results = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "        results[name] = None\n"
    "    except BaseException as error:\n"
    "        frames = traceback.extract_tb(error.__traceback__)\n"
    "        last = frames[-1] if frames else None\n"
    "        results[name] = {'type': type(error).__name__, 'message': str(error)[:300],\n"
    "                         'file': last.filename if last else None, 'line': last.lineno if last else None}\n"
    "print()\n"
    "print('" + _MARKER + "' + json.dumps(results))\n"
)


def changed_modules(files: Sequence[Mapping[str, object]], worktree: Path) -> tuple[str, ...]:
    """The dotted module names of the diff's added or changed importable Python files (see the module
    docstring); ``files`` as assembly's evidence lists them (``path``, ``kind``)."""
    modules: list[str] = []
    for item in files:
        path = str(item.get("path", ""))
        if item.get("kind") == "deleted" or not path.endswith(".py") or is_test_file(path):
            continue
        pure = PurePosixPath(path)
        if pure.name in _NEVER_IMPORTED:
            continue
        parts = list(pure.with_suffix("").parts)
        if parts and parts[0] == "src" and len(parts) > 1 and not (worktree / "src" / "__init__.py").is_file():
            parts = parts[1:]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(part.isidentifier() for part in parts):
            modules.append(".".join(parts))
    return tuple(sorted(set(modules)))[:MAX_MODULES]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportCheck:
    """What the import check found: ``checked`` false when it could not run (``detail`` says why)."""

    checked: bool
    detail: str
    modules: tuple[str, ...] = ()
    failures: tuple[Mapping[str, object], ...] = ()
    argv: tuple[str, ...] = ()
    request_id: str | None = None

    def to_evidence(self) -> dict[str, object]:
        return {"checked": self.checked, "detail": self.detail, "modules": list(self.modules),
                "failures": [dict(failure) for failure in self.failures], "argv": list(self.argv),
                "request_id": self.request_id}


def _reported(stdout: str) -> Mapping[str, object] | None:
    line = next((line for line in reversed(stdout.splitlines()) if line.startswith(_MARKER)), None)
    if line is None:
        return None
    try:
        document = json.loads(line[len(_MARKER):])
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def check_imports(ports: PipelinePorts, *, attempt: int, modules: Sequence[str], interpreter: str | None,
                  test_argv: Sequence[str] | None, working_directory: str | None = None) -> ImportCheck:
    """Import ``modules`` in the task's box (see the module docstring), in the worktree or, with
    ``working_directory``, in the base copy there."""
    if not modules:
        return ImportCheck(checked=True, detail="no changed importable module")
    if interpreter is None or test_argv is None:
        return ImportCheck(checked=False, modules=tuple(modules),
                           detail="imports not checked: no test command with an interpreter to import them with")
    argv = (interpreter, "-c", IMPORT_SCRIPT, *modules)
    run = ports.commands.run_check_command(ports.facts.task_id, argv, attempt=attempt, covered_by=tuple(test_argv),
                                           working_directory=working_directory)
    if not run.ran:
        return ImportCheck(checked=False, modules=tuple(modules), argv=argv, request_id=run.request_id,
                           detail=f"imports not checked: {run.refusal}")
    reported = _reported(run.stdout)
    if reported is None:
        return ImportCheck(checked=True, modules=tuple(modules), argv=argv, request_id=run.request_id,
                           failures=({"module": ", ".join(modules), "type": "no-report",
                                      "message": f"the import check ended {run.state} (exit {run.exit_code}) "
                                                 "without its report: importing ended the process"},),
                           detail="importing the changed modules ended the process")
    failures = tuple({"module": name, **{key: value for key, value in problem.items()
                                         if key in ("type", "message", "file", "line")}}
                     for name in modules if isinstance(problem := reported.get(name), dict))
    imported = len(modules) - len(failures)
    return ImportCheck(checked=True, modules=tuple(modules), argv=argv, request_id=run.request_id,
                       failures=failures, detail=f"{imported} of {len(modules)} changed module(s) import")


def failing_on_base_too(ports: PipelinePorts, *, attempt: int, check: ImportCheck, interpreter: str,
                        test_argv: Sequence[str], existing: Sequence[str]) -> tuple[str, ...]:
    """The modules of ``check``'s failures that fail to import on the base revision as well, with the same
    exception type (only modules in ``existing``, the ones the base has, are tried)."""
    tried = [str(failure["module"]) for failure in check.failures if failure.get("module") in existing]
    if not tried:
        return ()
    temp = ports.commands.temp_directory(ports.facts.task_id)
    scratch = write_base_scratch(ports.facts.worktree, root=temp, directory=BASE_DIRECTORY, overlay=())
    if scratch.path is None:
        return ()
    try:
        on_base = check_imports(ports, attempt=attempt, modules=tried, interpreter=interpreter, test_argv=test_argv,
                                working_directory=BASE_WORKING_DIRECTORY)
    finally:
        remove_base_scratch(temp, BASE_DIRECTORY)
    types = {str(failure["module"]): failure.get("type") for failure in on_base.failures}
    return tuple(failure_module for failure in check.failures
                 if (failure_module := str(failure["module"])) in types
                 and types[failure_module] == failure.get("type"))
