"""The ``codeflux`` console script and ``python -m codeflux``: harden the process, then load the CLI.

A process started with credential-like variables in its environment re-executes itself without them
(:func:`codeflux.worker.hardening.harden_process`; docs/security.md, "harden themselves at start"). Deciding
that here, before :mod:`codeflux.cli.main` and everything it imports (channel, coordinator, services, gateway:
≈ 0.4 s), means the process that re-executes has imported nothing but the hardening module and what it needs,
so the CLI is imported once, not twice; and the credential-laden first process lives for milliseconds instead
of the whole import. ``codeflux.cli.main.main`` hardens again for a process that entered another way
(``python -m codeflux.cli.main``); after this entry it finds nothing to remove.

Importing this module loads only :mod:`codeflux.worker.hardening` (ctypes, re, pathlib,
:mod:`codeflux.domain.errors`) and does nothing; ``tests/unit/cli/test_entry.py`` keeps it so.
"""

from __future__ import annotations

import sys

from codeflux.worker.hardening import harden_process

__all__ = ["main"]

HELPER_ENTRY = "__worker__"  # codeflux.worker.interpreter.HELPER_ENTRY (not imported: every start would pay)


def main() -> int:
    """Harden this process (re-executing it if needed), then run the CLI on ``sys.argv``. A frozen build's
    helpers (``codeflux __worker__ MODULE …``, :mod:`codeflux.worker.helpers`) are started here, before any
    CLI parsing, exactly as ``python -I -B -m MODULE`` starts them from a venv (no hardening re-execution: their
    environment is already the worker's allow-list)."""
    if sys.argv[1:2] == [HELPER_ENTRY]:
        from codeflux.worker.helpers import run_helper  # noqa: PLC0415 (only a helper's start needs it)

        return run_helper(sys.argv[2:])
    harden_process()
    if getattr(sys, "frozen", False):
        from codeflux.worker.interpreter import restore_library_path  # noqa: PLC0415 (a frozen build only)

        restore_library_path()
    from codeflux.cli.main import main as run_cli  # noqa: PLC0415 (the point: only after the re-execution)

    return run_cli()
