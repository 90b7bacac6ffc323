"""How codeflux starts its own Python helpers (the worker, the confinement launcher): isolated, writing no bytecode.

``-I`` leaves out every ``PYTHON*`` variable and the current directory on ``sys.path``; ``-B`` writes no
``__pycache__`` (isolated mode ignores ``PYTHONDONTWRITEBYTECODE``, and neither the install tree nor a task's
worktree is the helper's to change). Isolation also drops ``PYTHONPYCACHEPREFIX``, so a prefix this process was
given is passed on as ``-X pycache_prefix``: the helper then reads bytecode cached there (and only reads it)
instead of compiling every module at each start. With no prefix, the bytecode beside the installed sources is
read as before.

A frozen single-file build (PyInstaller: ``sys.frozen``) has no ``python -m``: its ``sys.executable`` is the
``codeflux`` binary itself, so a helper starts as ``codeflux __worker__ MODULE ARGS…`` (:data:`HELPER_ENTRY`), a
hidden entry :mod:`codeflux.cli.entry` hands to :func:`codeflux.worker.helpers.run_helper` before any CLI parsing
(``--help`` never names it). It runs only the helpers of :data:`HELPER_MODULES`, exactly as ``python -I -B -m
MODULE ARGS…`` would; a frozen program reads its modules from its own archive only (no ``PYTHON*`` path, no current
directory), and writes no bytecode. Such a child of the binary finds the directory its parent unpacked through the
PyInstaller variables :func:`frozen_runtime_environment` names, which the worker's allow-listed environment passes
on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = ["HELPER_ENTRY", "HELPER_MODULES", "frozen_runtime_environment", "is_frozen", "isolated_python_argv",
           "restore_library_path", "without_frozen_runtime"]

HELPER_ENTRY = "__worker__"
"""The hidden first argument of a frozen ``codeflux`` that starts one of its helpers."""
HELPER_MODULES = ("codeflux.worker", "codeflux.worker.confinement")
"""The helpers :data:`HELPER_ENTRY` runs (the worker, the fallback box's launcher); any other name is refused."""
FROZEN_RUNTIME_VARIABLES = ("_PYI_ARCHIVE_FILE", "_PYI_APPLICATION_HOME_DIR", "_PYI_PARENT_PROCESS_LEVEL")
"""What PyInstaller's bootloader (6.9 and later) gives the program it runs so that a child started from
``sys.executable`` uses the directory already unpacked instead of unpacking the archive again."""


def is_frozen() -> bool:
    """Whether this is a frozen single-file build (PyInstaller sets ``sys.frozen``)."""
    return bool(getattr(sys, "frozen", False))


def isolated_python_argv(module: str, *, python: str | None = None) -> list[str]:
    """``[python, -I, -B, (-X pycache_prefix=…), -m, module]``; ``python`` is this interpreter unless given.
    Frozen: ``[binary, __worker__, module]``, ``binary`` being this executable unless given."""
    if is_frozen():
        return [python or sys.executable, HELPER_ENTRY, module]
    prefix = ["-X", f"pycache_prefix={sys.pycache_prefix}"] if sys.pycache_prefix else []
    return [python or sys.executable, "-I", "-B", *prefix, "-m", module]


def frozen_runtime_environment(environment: Mapping[str, str] | None = None) -> dict[str, str]:
    """The PyInstaller variables of ``environment`` (this process's when None) a helper started from this frozen
    binary needs to reuse its unpacked directory; nothing when this is not a frozen build."""
    if not is_frozen():
        return {}
    source = os.environ if environment is None else environment
    return {name: source[name] for name in FROZEN_RUNTIME_VARIABLES if name in source}


def without_frozen_runtime(environment: Mapping[str, str]) -> dict[str, str]:
    """``environment`` without the PyInstaller variables: what a program that is not codeflux gets."""
    return {name: value for name, value in environment.items() if name not in FROZEN_RUNTIME_VARIABLES}


def restore_library_path(environment: dict[str, str] | None = None) -> None:
    """In a frozen build, give the programs this process starts (git, the browser…) the library search path the
    user started codeflux with: PyInstaller's bootloader points ``LD_LIBRARY_PATH`` at the unpacked directory
    (its bundled libssl, libstdc++…) and keeps the original in ``LD_LIBRARY_PATH_ORIG``. This process itself is
    unaffected (the dynamic loader read the variable when it started). Nothing happens outside a frozen build."""
    if not is_frozen():
        return
    target = os.environ if environment is None else environment
    original = target.pop("LD_LIBRARY_PATH_ORIG", None)
    if original:
        target["LD_LIBRARY_PATH"] = original
    else:
        target.pop("LD_LIBRARY_PATH", None)
