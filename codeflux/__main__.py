"""``python -m codeflux``: the same entry point as the ``codeflux`` console script."""

from __future__ import annotations

import sys

from codeflux.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
