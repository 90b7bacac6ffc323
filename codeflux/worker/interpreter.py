"""How codeflux starts its own Python helpers (the worker, the confinement launcher): isolated, writing no bytecode.

``-I`` leaves out every ``PYTHON*`` variable and the current directory on ``sys.path``; ``-B`` writes no
``__pycache__`` (isolated mode ignores ``PYTHONDONTWRITEBYTECODE``, and neither the install tree nor a task's
worktree is the helper's to change). Isolation also drops ``PYTHONPYCACHEPREFIX``, so a prefix this process was
given is passed on as ``-X pycache_prefix``: the helper then reads bytecode cached there (and only reads it)
instead of compiling every module at each start. With no prefix, the bytecode beside the installed sources is
read as before.
"""

from __future__ import annotations

import sys

__all__ = ["isolated_python_argv"]


def isolated_python_argv(module: str, *, python: str | None = None) -> list[str]:
    """``[python, -I, -B, (-X pycache_prefix=…), -m, module]``; ``python`` is this interpreter unless given."""
    prefix = ["-X", f"pycache_prefix={sys.pycache_prefix}"] if sys.pycache_prefix else []
    return [python or sys.executable, "-I", "-B", *prefix, "-m", module]
