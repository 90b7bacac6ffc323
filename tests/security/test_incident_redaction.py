"""A secret in a reported traceback never reaches SQLite's bytes: URL userinfo and a bearer header (key
patterns) and a provider key that is only in the OS credential store (never loaded by this process, shaped like
no known key) are redacted before the occurrence, its fingerprint's message or its event is written."""

from __future__ import annotations

import secrets
from pathlib import Path

import keyring.backend
import pytest

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import incidents_pb2 as pb
from codeflux.domain.providers import CREDENTIAL_SERVICE, CredentialReference, ProviderName
from codeflux.redact import Redactor
from codeflux.services import incidents
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.provider_credentials import record_provider_credential_reference
from tests.fixtures.provider_servers import a_test_key
from tests.fixtures.repos import make_repository
from tests.fixtures.services import call, service_app


def _database_bytes(db: Database) -> bytes:
    return b"".join(Path(f"{db.path}{suffix}").read_bytes() for suffix in ("", "-wal", "-shm")
                    if Path(f"{db.path}{suffix}").exists())


@pytest.mark.keyring
@pytest.mark.security
def test_secrets_in_a_reported_traceback_never_reach_sqlite(
        db: Database, data_location: DataLocation, tmp_path: Path,
        secret_service: keyring.backend.KeyringBackend) -> None:
    repo = make_repository(tmp_path).path
    key = a_test_key()
    # Stored the way another process would have: this process's redactor has never seen it.
    secret_service.set_password(CREDENTIAL_SERVICE, ProviderName.OPENAI.value, key)
    record_provider_credential_reference(db, provider=ProviderName.OPENAI.value,
                                         credential_ref=str(CredentialReference.for_provider(ProviderName.OPENAI)))
    password, bearer = "pw" + secrets.token_hex(12), secrets.token_hex(24)
    marker = "visible-" + secrets.token_hex(6)
    text = ("Traceback (most recent call last):\n"
            '  File "/ci/calc/pkg/calc.py", line 2, in add\n'
            "    return a + b\n"
            f"RuntimeError: push to https://deploy:{password}@git.example.invalid/calc.git failed with {key} "
            f"({marker})\nrequest headers: Authorization: Bearer {bearer}\n")
    assert key in Redactor().redact(text)  # positive control: no pattern catches the key; only loading it does
    app = service_app(db, data_location, incidents.methods)

    reply = call(app, "/codeflux.v1.IncidentService/Report", pb.ReportIncidentRequest(
        control=common_pb2.MutationControl(idempotency_key="r-1"), repository_root=str(repo), text=text))

    assert isinstance(reply, pb.IncidentReport) and reply.created
    shown = call(app, "/codeflux.v1.IncidentService/Show", pb.ShowIncidentRequest(
        incident_id=reply.incident.incident_id))
    assert isinstance(shown, pb.IncidentDetail)
    stored = _database_bytes(db)
    assert marker.encode() in stored  # positive control: the text itself was stored
    assert marker in shown.occurrences[0].redacted_text
    for secret in (key, password, bearer):
        assert secret.encode() not in stored
        assert secret.encode() not in reply.SerializeToString() + shown.SerializeToString()
    db.checkpoint_wal()
    assert not any(secret.encode() in _database_bytes(db) for secret in (key, password, bearer))
