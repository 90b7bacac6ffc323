"""The web client's files: package data under ``codeflux/server/static/``, served by name.

Only names matching :data:`ASSET_PATH` are looked up (lower-case-safe segments, a known extension, no
``..``, no hidden files), the resolved file must lie inside the static directory, and symbolic links
are never followed. Each extension has one exact ``Content-Type`` (``text/javascript`` for modules).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["ASSET_PATH", "CONTENT_TYPES", "PACKAGE_STATIC_DIR", "Asset", "StaticFiles"]

PACKAGE_STATIC_DIR: Final = Path(__file__).resolve().parent / "static"

CONTENT_TYPES: Final = {
    "html": "text/html; charset=utf-8",
    "js": "text/javascript; charset=utf-8",
    "mjs": "text/javascript; charset=utf-8",
    "css": "text/css; charset=utf-8",
    "json": "application/json",
    "svg": "image/svg+xml",
    "png": "image/png",
    "ico": "image/x-icon",
    "woff2": "font/woff2",
    "txt": "text/plain; charset=utf-8",
}

# Up to four directory segments and a file name; each segment starts with a letter or digit.
_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
ASSET_PATH: Final = re.compile(
    rf"(?:{_SEGMENT}/){{0,4}}{_SEGMENT}(?:\.[A-Za-z0-9_-]{{1,32}})*\.(?:{'|'.join(CONTENT_TYPES)})"
)
_MAX_ASSET_BYTES: Final = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Asset:
    content_type: str
    body: bytes


@dataclass(frozen=True, slots=True)
class StaticFiles:
    """The directory the web client's files are read from (the package's by default)."""

    directory: Path = PACKAGE_STATIC_DIR

    def get(self, name: str) -> Asset | None:
        """The file ``name`` (relative, ``/``-separated) if it is a servable asset that exists; else None."""
        if not ASSET_PATH.fullmatch(name):
            return None
        current = self.directory
        try:
            for part in name.split("/"):
                current = current / part
                info = os.lstat(current)
                if stat.S_ISLNK(info.st_mode):
                    return None
            if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_ASSET_BYTES:
                return None
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            descriptor = os.open(current, flags)
        except OSError:
            return None
        with os.fdopen(descriptor, "rb") as handle:
            body = handle.read(_MAX_ASSET_BYTES + 1)
        if len(body) > _MAX_ASSET_BYTES:
            return None
        return Asset(content_type=CONTENT_TYPES[name.rpartition(".")[2]], body=body)

    def index(self) -> Asset | None:
        return self.get("index.html")
