"""The ``-c`` options every git process codeflux starts carries, so no repository hook, fsmonitor program,
network transport, pager or signature program ever runs — in the worker (inside the box) and in the few
git processes codeflux starts outside a task (``repo clean``'s bundles)."""

from __future__ import annotations

from typing import Final

__all__ = ["SAFE_GIT_OPTIONS"]

SAFE_GIT_OPTIONS: Final = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "protocol.allow=never",
    "-c", "core.pager=cat",
    "-c", "color.ui=false",
    "-c", "log.showSignature=false",
    "-c", "core.quotePath=false",
    "--no-pager",
)  # fmt: skip
