"""The dependency locks (issue 21 item 11): every dependency pyproject.toml names is pinned in them with its hashes,
so setup and the installed smoke install nothing pip did not check (`cmd/codeflux-dev lock` writes them)."""

from __future__ import annotations

import itertools
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
    return pins_of_text(lock.read_text())


def pins_of_text(text: str) -> dict[str, int]:
    found: dict[str, int] = {}
    current = ""
    for line in text.splitlines():
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


def test_the_check_tool_wheelhouse_is_hash_checked_at_the_locked_versions() -> None:
    """The overlay's wheelhouse (setup's `pip download --require-hashes`) takes each check tool's pin and hashes
    from dev.lock: the versions the suite runs are the ones downloaded, and a tool missing from the lock fails."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader("codeflux_dev", str(REPO / "cmd" / "codeflux-dev"))
    spec = importlib.util.spec_from_loader("codeflux_dev", loader)
    assert spec is not None
    dev = importlib.util.module_from_spec(spec)
    loader.exec_module(dev)
    text = dev.locked_requirements(dev.DEV_LOCK, dev.WHEELHOUSE_TOOLS)
    lock = (REPO / "requirements" / "dev.lock").read_text().splitlines()
    locked = {normalized(m.group(1)): m.group(2) for m in map(PIN.match, lock) if m}
    listed = {normalized(m.group(1)): m.group(2) for m in map(PIN.match, text.splitlines()) if m}
    assert listed == {name: locked[name] for name in ("coverage", "hypothesis", "sortedcontainers")}
    assert all(count >= 1 for count in pins_of_text(text).values())
    lines = text.splitlines()  # a continued line is always followed by one of its hashes (pip reads it whole)
    assert all(after.strip().startswith("--hash=") for line, after in itertools.pairwise(lines) if line.endswith("\\"))
    with pytest.raises(dev.GateFailedError, match="pins no not-a-real-tool"):
        dev.locked_requirements(dev.DEV_LOCK, ("coverage", "not-a-real-tool"))


COMPROMISED_LITELLM = frozenset({"1.82.7", "1.82.8"})  # shipped a credential stealer (a .pth run at every start)


def test_the_litellm_proxy_lock_pins_one_release_with_hashes_and_never_a_compromised_one() -> None:
    """requirements/litellm.lock (the proxy test's own venv) pins litellm exactly as requirements/litellm.in says,
    every package with its hashes, and never the two releases that shipped malware."""
    wanted = [line.split("#", 1)[0].strip() for line in (REPO / "requirements" / "litellm.in").read_text().splitlines()]
    (requirement,) = [line for line in wanted if line]
    match = re.fullmatch(r"litellm\[proxy\]==([0-9][0-9A-Za-z.]*)", requirement)
    assert match, f"requirements/litellm.in must pin one release exactly: {requirement!r}"
    lock = REPO / "requirements" / "litellm.lock"
    versions = {normalized(m.group(1)): m.group(2) for m in map(PIN.match, lock.read_text().splitlines()) if m}
    assert versions["litellm"] == match.group(1) and match.group(1) not in COMPROMISED_LITELLM
    pinned = pins(lock)
    assert {"fastapi", "uvicorn", "tiktoken"} <= set(pinned)  # the proxy extra's, not litellm alone
    assert all(count >= 1 for count in pinned.values()), [name for name, count in pinned.items() if count == 0]
