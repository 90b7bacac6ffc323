"""``codeflux __worker__ MODULE ARGS…``: the hidden entry through which a frozen single-file build starts its helpers.

:mod:`codeflux.cli.entry` hands a command line whose first argument is
:data:`~codeflux.worker.interpreter.HELPER_ENTRY` here before any CLI parsing (``--help`` never names it);
:func:`~codeflux.worker.interpreter.isolated_python_argv` builds such a command line when codeflux is frozen. Only the
helpers of :data:`~codeflux.worker.interpreter.HELPER_MODULES` run, exactly as ``python -I -B -m MODULE ARGS…``
runs them from a venv.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

from codeflux.worker.interpreter import HELPER_ENTRY, HELPER_MODULES

__all__ = ["run_helper"]

_HELPER_USAGE_EXIT: Final = 2


def run_helper(arguments: Sequence[str]) -> int:
    """``codeflux __worker__ MODULE ARGS…``: run the helper ``MODULE`` (one of :data:`HELPER_MODULES`) with
    ``ARGS`` as ``python -m MODULE ARGS…`` would; exit 2 with one line on stderr for any other module."""
    module, rest = (arguments[0], list(arguments[1:])) if arguments else ("", [])
    if module == "codeflux.worker" and not rest:
        from codeflux.worker.__main__ import main as serve_worker  # noqa: PLC0415 (the helper's own imports)

        return serve_worker()
    if module == "codeflux.worker.confinement":
        from codeflux.worker.confinement.launcher import main as launch_boxed  # noqa: PLC0415

        return launch_boxed(rest)
    print(f"codeflux: {HELPER_ENTRY} runs only {' or '.join(HELPER_MODULES)} (the worker takes no arguments)",
          file=sys.stderr, flush=True)
    return _HELPER_USAGE_EXIT
