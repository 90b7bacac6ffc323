"""Wheels of codeflux's own check tools, rebuilt from codeflux's installation: the overlay's default source.

codeflux depends on the check tools it runs in a task's box (coverage.py, Hypothesis), so they are already
installed next to it. When no wheelhouse or index is configured, an overlay install takes them from there:
:func:`rebuild_wheels` writes one wheel per distribution — each tool and every dependency of it that is
installed here — from the files its ``RECORD`` lists inside site-packages (scripts, bytecode and install-time
files left out; a fresh ``RECORD`` with sha256 digests), tagged as its ``WHEEL`` file says. The install itself
is unchanged: the repository's interpreter runs pip in the box, ``--no-index`` over these wheels, so pip — not
codeflux — decides whether they suit that interpreter (a cp311 wheel is refused by Python 3.12, and the stage
then names the fix). Nothing here downloads anything or runs code.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import re
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

__all__ = ["rebuild_wheels"]

_MAX_FILES: Final = 5_000
_MAX_BYTES: Final = 128 * 1024 * 1024
_LEFT_OUT_METADATA: Final = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})
_NAME: Final = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_FIXED_TIME: Final = (1980, 1, 1, 0, 0, 0)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(names: Iterable[str]) -> list[importlib.metadata.Distribution]:
    """Each distribution named and, transitively, every requirement of it that is installed here (a
    requirement behind an extra is left out; one whose marker excluded it here is not installed here)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    waiting = [_normalized(name) for name in names]
    while waiting:
        name = waiting.pop()
        if name in found:
            continue
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found[name] = distribution
        for requirement in distribution.requires or ():
            if "extra" in requirement.partition(";")[2]:
                continue
            if (match := _NAME.match(requirement)) is not None:
                waiting.append(_normalized(match.group(1)))
    return [found[name] for name in sorted(found)]


def _tags(distribution: importlib.metadata.Distribution) -> str | None:
    """The wheel file name's tag part (``py3-none-any``, or the compressed set of a binary wheel)."""
    text = distribution.read_text("WHEEL") or ""
    tags = [line.partition(":")[2].strip() for line in text.splitlines() if line.startswith("Tag:")]
    parts = [tag.split("-") for tag in tags if tag.count("-") == 2]
    if not parts:
        return None
    return "-".join(".".join(sorted({part[index] for part in parts})) for index in range(3))


def _members(distribution: importlib.metadata.Distribution) -> Iterator[tuple[str, Path]]:
    """(name in the wheel, file here) for each file of the distribution inside site-packages."""
    base = Path(str(distribution.locate_file("")))
    for entry in distribution.files or ():
        parts = entry.parts
        if not parts or parts[0] == ".." or "__pycache__" in parts or entry.suffix == ".pyc":
            continue
        if parts[0].endswith(".dist-info") and len(parts) == 2 and parts[1] in _LEFT_OUT_METADATA:
            continue
        yield entry.as_posix(), base / entry


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write_wheel(distribution: importlib.metadata.Distribution, target: Path) -> str | None:
    name, version = distribution.metadata["Name"], distribution.version
    tags = _tags(distribution)
    if not name or not version or tags is None:
        return f"{name or 'a distribution'} has no name, version or wheel tag recorded"
    info = f"{re.sub(r'[-_.]+', '_', name)}-{version}.dist-info"
    path = target / f"{re.sub(r'[-_.]+', '_', name)}-{version}-{tags}.whl"
    record: list[str] = []
    total = 0
    with zipfile.ZipFile(path, "x", compression=zipfile.ZIP_DEFLATED) as wheel:
        for count, (member, source) in enumerate(_members(distribution)):
            if count >= _MAX_FILES or source.is_symlink() or not source.is_file():
                return f"{name} {version}: {member} is not a regular file, or it has more than {_MAX_FILES} files"
            data = source.read_bytes()
            total += len(data)
            if total > _MAX_BYTES:
                return f"{name} {version} is larger than {_MAX_BYTES // (1024 * 1024)} MiB"
            item = zipfile.ZipInfo(member, date_time=_FIXED_TIME)
            item.external_attr = (source.stat().st_mode & 0o777 | 0o100000) << 16
            item.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(item, data)
            record.append(f"{member},{_digest(data)},{len(data)}")
        record.append(f"{info}/RECORD,,")
        wheel.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=_FIXED_TIME), "\n".join(record) + "\n")
    return None


def rebuild_wheels(names: Iterable[str], target: Path) -> str | None:
    """Write into ``target`` (created, 0700) a wheel of each distribution in ``names`` and of its installed
    requirements, from codeflux's own installation; None when done, else why not (see the module docstring)."""
    chosen = list(names)
    distributions = _closure(chosen)
    missing = sorted({_normalized(name) for name in chosen} - {_normalized(d.metadata["Name"] or "")
                                                               for d in distributions})
    if missing:
        return f"{', '.join(missing)} is not installed with codeflux"
    target.mkdir(mode=0o700)
    for distribution in distributions:
        try:
            if (problem := _write_wheel(distribution, target)) is not None:
                return problem
        except OSError as error:
            return f"a wheel of {distribution.metadata['Name']} could not be written ({type(error).__name__})"
    return None
