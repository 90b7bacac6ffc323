"""``python -m codeflux``: the same entry point as the ``codeflux`` console script (:mod:`codeflux.cli.entry`)."""

from __future__ import annotations

import sys

from codeflux.cli.entry import main

if __name__ == "__main__":
    sys.exit(main())
