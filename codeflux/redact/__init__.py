"""The one redaction pipeline, used at every boundary where text leaves the coordinator.

Owns: exact matching of loaded secrets (longest first), the known key patterns, streaming redaction
that catches a secret split across chunks, and ``scan_for_secrets`` (kinds only, never values) for the
diagnostics exporter.

May import: the standard library and ``codeflux.domain``. Nothing here does I/O; importing the package
creates one empty process-wide redactor and nothing else.
"""

from codeflux.redact.patterns import SecretKind
from codeflux.redact.pipeline import (
    MIN_SECRET_LENGTH,
    REDACTED,
    Redactor,
    StreamRedactor,
    default_redactor,
    redact,
    scan_for_secrets,
)

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "Redactor",
    "SecretKind",
    "StreamRedactor",
    "default_redactor",
    "redact",
    "scan_for_secrets",
]
