"""The dependency locks (issue 21 item 11): every dependency pyproject.toml names is pinned in them with its hashes,
so setup and the installed smoke install nothing pip did not check (`cmd/codeflux-dev lock` writes them)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ \\]+)")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lock: Path) -> dict[str, int]:
    """name → how many hashes its pin carries."""
    found: dict[str, int] = {}
    current = ""
    for line in lock.read_text().splitlines():
        match = PIN.match(line)
        if match:
            current = normalized(match.group(1))
            found[current] = 0
        elif line.strip().startswith("--hash=sha256:") and current:
            found[current] += 1
        elif line.strip() and not line.startswith(" "):
            current = ""  # anything else at the start of a line ends a pin
    return found


def requirement_names(requirements: list[str]) -> set[str]:
    return {normalized(re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0]) for requirement in requirements}


PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


@pytest.mark.parametrize(("lock", "names"), [
    ("runtime.lock", requirement_names(PROJECT["dependencies"])),
    ("dev.lock", requirement_names(PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"])
     | {"hatchling", "editables", "uv"}),
])
def test_every_dependency_is_pinned_with_hashes(lock: str, names: set[str]) -> None:
    pinned = pins(REPO / "requirements" / lock)
    missing = sorted(names - set(pinned))
    assert not missing, f"not in requirements/{lock}: {missing} (run `cmd/codeflux-dev lock`)"
    assert all(count >= 1 for count in pinned.values()), [name for name, count in pinned.items() if count == 0]


def test_a_user_install_pins_the_same_versions_as_the_tested_one() -> None:
    """runtime.lock is a subset of dev.lock at the same versions: what the suite ran is what a user gets."""
    def versions(lock: str) -> dict[str, str]:
        text = (REPO / "requirements" / lock).read_text().splitlines()
        return {normalized(m.group(1)): m.group(2) for m in map(PIN.match, text) if m}

    runtime, dev = versions("runtime.lock"), versions("dev.lock")
    assert runtime and {name: dev.get(name) for name in runtime} == runtime
