"""``python -I -m codeflux.worker``: read one JSON line of startup configuration from stdin, then serve.

Exit codes: 0 after an orderly stop, 2 when the startup configuration is refused (the reason goes to
stderr; the token is never printed). The coordinator starts workers with ``-I`` (isolated mode) so that
neither ``PYTHON*`` variables nor the worktree (the current directory) can put modules on the path.
"""

from __future__ import annotations

import os
import sys

from codeflux.domain.errors import CodefluxError
from codeflux.worker.hardening import make_undumpable
from codeflux.worker.interpreter import without_frozen_runtime
from codeflux.worker.server import serve
from codeflux.worker.startup import read_startup_config


def main() -> int:
    make_undumpable()
    try:
        config = read_startup_config(sys.stdin.buffer)
    except CodefluxError as error:
        print(f"codeflux worker: {error}", file=sys.stderr, flush=True)
        return 2
    try:
        # A frozen build's PyInstaller variables are the worker's own (its confinement passes them to the
        # launcher, a frozen codeflux too), never part of the environment its commands start from.
        return serve(config, environment=without_frozen_runtime(os.environ), stdin=sys.stdin.buffer,
                     stdout=sys.stdout)
    except CodefluxError as error:
        print(f"codeflux worker: {error}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
