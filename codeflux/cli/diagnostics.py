"""`codeflux diagnostics export --output PATH`: a bundle to attach to a bug report.

The bundle is JSON holding versions, counts and states only: codeflux, Python, SQLite, apsw and
pygit2/libgit2 versions; the database's schema version and what this codeflux supports; rows per
table, migrations succeeded/failed, sessions, which providers have a stored key (yes/no), database
size; host OS, architecture and CPU count; each prerequisite's status from ``doctor``. It never holds
paths, requirement text, file contents, model output, log contents or credentials.

Before anything is written, the serialized bytes are scanned for secrets: the known key patterns of
the redaction pipeline *and* the provider keys actually stored in the OS credential store. A hit
refuses the export (nothing is written) and names the kind of secret, never its value. When the
credential store is unavailable the stored keys cannot be scanned; the bundle says so and the pattern
scan still runs. The file is created with O_CREAT|O_EXCL, mode 0600: an existing path is never
overwritten (exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import importlib.metadata
import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

import apsw
import pygit2

import codeflux
from codeflux.cli.context import CliContext
from codeflux.coordinator.doctor import run_doctor
from codeflux.coordinator.maintenance import collect_diagnostics_of_storage
from codeflux.coordinator.provider_keys import process_keys
from codeflux.credentials import Secret, load_provider_key, probe_credential_store
from codeflux.domain.errors import (
    CodefluxError,
    CredentialNotFoundError,
    CredentialStoreUnavailableError,
    OperationFailedError,
    OutputExistsError,
    SecretLeakError,
    UsageError,
)
from codeflux.domain.providers import ProviderName
from codeflux.redact import Redactor, SecretKind, scan_for_secrets
from codeflux.store.location import DataLocation

NAME = "diagnostics"
SUMMARY = ("export a diagnostics bundle: versions, counts and states only, scanned for secrets "
           "(`diagnostics export --output PATH`)")

BUNDLE_FORMAT_VERSION = 1

EXCLUDED_CONTENT = (
    "paths",
    "requirement text",
    "file contents",
    "model output",
    "log contents",
    "event payloads",
    "settings values",
    "credentials",
)


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="diagnostics_action", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export",
        help="write the bundle to a new file (0600; never overwrites)",
        description="write a diagnostics bundle (versions, counts, states; scanned for secrets) "
                    "to a new file",
        allow_abbrev=False,
    )
    export.add_argument("--output", required=True, metavar="PATH",
                        help="the bundle file to create; it must not exist yet and its directory must exist")
    export.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH",
                        help="data directory (default: $CODEFLUX_HOME, else the platform's user data dir)")


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    output = _parse_output(args.output)
    if os.path.lexists(output):
        raise OutputExistsError(what=f"the output {output}")
    location = ctx.location()
    process_keys()  # keys given in the environment are loaded secrets too: the scan refuses them like stored ones
    stored = _load_stored_keys()
    text = json.dumps(_build_bundle(location, stored), indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    _refuse_secrets(text, stored)
    data = text.encode("ascii")
    _write_new_file(output, data)
    ctx.say(f"diagnostics: wrote {output} ({len(data):,} bytes): versions, counts and states only")
    ctx.say(f"diagnostics: secret scan passed — key patterns; stored provider keys: {stored.scan_note}")
    return 0


@dataclass(slots=True, kw_only=True)
class _StoredKeys:
    """The provider keys in the OS credential store, held only to look for them in the bundle."""

    keys: dict[str, Secret] = field(default_factory=dict)
    scan_note: str = ""


def _load_stored_keys() -> _StoredKeys:
    status = probe_credential_store()
    if not status.usable:
        return _StoredKeys(scan_note=f"not scanned: no usable OS credential store ({status.state.value})")
    found = _StoredKeys()
    for name in ProviderName:
        try:
            found.keys[name.value] = load_provider_key(name)
        except CredentialNotFoundError:
            continue
        except CredentialStoreUnavailableError:
            return _StoredKeys(scan_note="not scanned: the OS credential store stopped answering")
    count = len(found.keys)
    found.scan_note = f"scanned ({count} stored key{'' if count == 1 else 's'})"
    return found


def _build_bundle(location: DataLocation, stored: _StoredKeys) -> dict[str, object]:
    storage = collect_diagnostics_of_storage(location)
    return {
        "bundle_format": BUNDLE_FORMAT_VERSION,
        "created_at": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "versions": {
            "codeflux": codeflux.__version__,
            "python": f"{platform.python_version()} ({platform.python_implementation()})",
            "sqlite": apsw.sqlite_lib_version(),
            "apsw": apsw.apsw_version(),
            "pygit2": importlib.metadata.version("pygit2"),
            "libgit2": pygit2.LIBGIT2_VERSION,
        },
        "schema": {
            "database": storage.schema_version,
            "supported": storage.supported_schema_version,
        },
        "storage": dataclasses.asdict(storage),  # StrEnum states serialize as their values
        "host": {
            "os": platform.system(),
            "os_release": platform.release(),
            "arch": platform.machine(),
            "cpu_count": os.cpu_count(),
        },
        "prerequisites": _prerequisite_statuses(location),
        "secret_scan": {
            "key_patterns": "scanned before writing",
            "stored_provider_keys": stored.scan_note,
        },
        "excluded": list(EXCLUDED_CONTENT),
    }


def _prerequisite_statuses(location: DataLocation) -> list[dict[str, str]]:
    """Each doctor check's status only: its summaries name paths and are left out on purpose.

    A list of pairs rather than ``{id: status}``: a check id such as ``provider-credentials`` used as a
    key in front of a quoted value reads like a credential assignment to the secret scanner.
    """
    try:
        report = run_doctor(location)
    except CodefluxError:
        return [{"check": "doctor", "status": "unknown"}]
    return [{"check": check.id, "status": check.status.value} for check in report.checks]


def _refuse_secrets(text: str, stored: _StoredKeys) -> None:
    """Raise SecretLeakError naming each kind of secret found in ``text``; never a value."""
    kinds = set(scan_for_secrets(text))
    found = kinds - {SecretKind.LOADED_SECRET.value}
    for provider, secret in sorted(stored.keys.items()):
        # One redactor per key, so a hit can name the provider; the JSON-escaped form counts too.
        value = secret.reveal()
        probe = Redactor()
        probe.add_secret(value)
        probe.add_secret(json.dumps(value, ensure_ascii=True)[1:-1])
        if probe.scan(text):
            found.add(f"the stored key of provider {provider}")
    named_providers = any(item.startswith("the stored key of provider") for item in found)
    if SecretKind.LOADED_SECRET.value in kinds and not named_providers:
        found.add("a secret loaded by this process")
    if found:
        raise SecretLeakError(
            f"the bundle would contain a secret ({'; '.join(sorted(found))}); nothing was written — "
            "please report this as a bug in codeflux"
        )


def _parse_output(raw: str) -> Path:
    if not raw.strip():
        raise UsageError("--output is empty; give the path of a new file, "
                         "for example --output ./diagnostics.json")
    if "\x00" in raw:
        raise UsageError("--output contains a NUL byte")
    return Path(os.path.abspath(os.path.expanduser(raw)))


def _write_new_file(path: Path, data: bytes) -> None:
    """Create ``path`` (O_EXCL, 0600) and write ``data``; on failure nothing is left behind."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise OutputExistsError(what=f"the output {path}") from None
    except (FileNotFoundError, NotADirectoryError):
        raise OperationFailedError(
            f"the output directory {path.parent} does not exist; create it first "
            "(diagnostics never creates directories)"
        ) from None
    except PermissionError:
        raise OperationFailedError(f"the output directory {path.parent} is not writable; "
                                   "choose another path") from None
    except OSError as err:
        raise OperationFailedError(f"cannot create the output file ({err.strerror})") from None
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except OSError as err:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        raise OperationFailedError(f"the bundle could not be written ({err.strerror}); nothing was left "
                                   "behind") from None
    os.close(fd)
