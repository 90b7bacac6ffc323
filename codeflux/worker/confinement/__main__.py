"""``python -I -B -m codeflux.worker.confinement POLICY -- PROGRAM ARGV…``: the fallback box's launcher."""

from __future__ import annotations

import sys

from codeflux.worker.confinement.launcher import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
