"""``codeflux.cli.entry``, the console script's and ``python -m codeflux``'s entry: importing it does nothing and
loads nothing of the CLI, so the re-execution it decides costs no CLI import (docs/benchmarks.md, "bench tasks")."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import codeflux

REPOSITORY = Path(codeflux.__file__).resolve().parents[1]
PROBE = """
import json, os, sys
before = dict(os.environ)
import codeflux.cli.entry
print(json.dumps({"modules": sorted(sys.modules), "environment_unchanged": dict(os.environ) == before}))
"""
# What the entry may load of codeflux: itself, the hardening module and what that imports.
LIGHT = {"codeflux", "codeflux.cli", "codeflux.cli.entry", "codeflux.worker", "codeflux.worker.hardening",
         "codeflux.worker.environment", "codeflux.domain", "codeflux.domain.errors"}
HEAVY_THIRD_PARTY = ("grpc", "google.protobuf", "apsw", "pygit2", "websockets", "keyring", "httpx")


def test_importing_the_entry_loads_only_the_hardening_module_and_changes_nothing() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60)
    seen = json.loads(done.stdout)
    ours = {name for name in seen["modules"] if name == "codeflux" or name.startswith("codeflux.")}
    assert ours <= LIGHT, sorted(ours - LIGHT)
    assert not [name for name in seen["modules"] if name.startswith(HEAVY_THIRD_PARTY)]
    assert seen["environment_unchanged"] and done.stderr == ""


def test_the_console_script_and_python_m_codeflux_name_the_entry() -> None:
    scripts = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"codeflux": "codeflux.cli.entry:main"}
    assert "from codeflux.cli.entry import main" in (REPOSITORY / "codeflux" / "__main__.py").read_text()
