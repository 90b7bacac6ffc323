"""The keys a run holds: a stored key is read from the real OS credential store once per provider for the run,
again only when it changed (stored or deleted here, or its reference row rewritten by another process), and a
deleted key is dropped; an environment key wins and the store is not asked. Calls go through the real gateway
to a loopback server speaking the Anthropic wire; what reached it (the ``x-api-key`` header) is checked."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.coordinator.provider_keys import key_loader
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.credentials import (
    EnvironmentKey,
    HeldKeys,
    Secret,
    delete_provider_key,
    environment_keys,
    load_provider_key,
    store_provider_key,
)
from codeflux.domain.errors import CredentialNotFoundError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest
from codeflux.domain.money import USD, Money
from codeflux.domain.providers import CredentialReference, ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.redact import Redactor
from codeflux.store.database import Database
from codeflux.store.provider_credentials import (
    delete_provider_credential_reference,
    record_provider_credential_reference,
)
from codeflux.store.tasks import insert_task
from tests.fixtures.provider_servers import ProviderServer, a_test_key, anthropic_message, json_reply

pytestmark = pytest.mark.keyring

REQUEST = ModelRequest(model="chosen-by-the-rung", system="You are terse.",
                       messages=(Message.user_text("Say hi."),), max_output_tokens=64)
USAGE = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
ANTHROPIC = ProviderName.ANTHROPIC


class CountingStore:
    """The real OS credential store, counting its reads."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self, provider: ProviderName) -> Secret:
        self.reads += 1
        return load_provider_key(provider)


def _gateway(db: Database, server: ProviderServer, keys: HeldKeys) -> Iterator[ModelGateway]:
    redactor = Redactor()
    with AnthropicAdapter(base_url=server.base_url, redactor=redactor, key_loader=key_loader(db, keys=keys)) as adapter:
        yield ModelGateway(db, [ModelRoute(provider="anthropic", adapter=adapter, cheap_model="claude-sonnet-4-5",
                                           capable_model="claude-opus-4-5", redactor=redactor)])


def _task(db: Database, tmp_path: Path, server: ProviderServer) -> TaskId:
    approve_model_endpoint(db, provider=ANTHROPIC, base_url=server.base_url + "/")
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "repo",
                                    worktree=tmp_path / "worktree", state=TaskState.RUNNING))
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=10_000, currency=USD), expected_revision=None,
                                 idempotency_key="budget")
    return task_id


def _call(gateway: ModelGateway, server: ProviderServer, task_id: TaskId, key: str) -> str:
    server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "hi"}], usage=USAGE)))
    gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key=key)
    return server.requests[-1].headers["x-api-key"]


def test_a_stored_key_is_read_once_for_the_run_and_again_only_when_it_changed(
    db: Database, tmp_path: Path, server: ProviderServer, anthropic_key: str
) -> None:
    store = CountingStore()
    keys = HeldKeys({}, loader=store)
    record_provider_credential_reference(db, provider=ANTHROPIC.value,
                                         credential_ref=str(CredentialReference.for_provider(ANTHROPIC)))
    task_id = _task(db, tmp_path, server)
    for gateway in _gateway(db, server, keys):
        sent = [_call(gateway, server, task_id, f"call-{n}") for n in range(3)]
        assert sent == [anthropic_key] * 3 and store.reads == 1  # held for the run, not read per call

        rotated = a_test_key()
        store_provider_key(ANTHROPIC, Secret(rotated))  # changed in this process (Settings → Providers)
        assert _call(gateway, server, task_id, "call-rotated") == rotated and store.reads == 2

        # `codeflux provider set` in another process rewrites the reference row: read again
        record_provider_credential_reference(db, provider=ANTHROPIC.value,
                                             credential_ref=str(CredentialReference.for_provider(ANTHROPIC)))
        assert _call(gateway, server, task_id, "call-other-process") == rotated and store.reads == 3
        assert _call(gateway, server, task_id, "call-held") == rotated and store.reads == 3

        # deleted (store entry and reference row): the held key is dropped, nothing is sent
        requests = len(server.requests)
        delete_provider_key(ANTHROPIC)
        delete_provider_credential_reference(db, provider=ANTHROPIC.value)
        with pytest.raises(CredentialNotFoundError):
            gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="call-deleted")
        assert len(server.requests) == requests and store.reads == 4


def test_an_environment_key_wins_over_the_stored_one_and_the_store_is_not_read(
    db: Database, tmp_path: Path, server: ProviderServer, anthropic_key: str
) -> None:
    given = a_test_key()
    store = CountingStore()
    found, ignored = environment_keys({"ANTHROPIC_API_KEY": given})
    keys = HeldKeys(found, ignored=ignored, loader=store)
    task_id = _task(db, tmp_path, server)
    for gateway in _gateway(db, server, keys):
        assert [_call(gateway, server, task_id, f"call-{n}") for n in range(2)] == [given, given]
    assert store.reads == 0
    # the positive control: without it, the same run sends the stored key
    for gateway in _gateway(db, server, HeldKeys({}, loader=store)):
        assert _call(gateway, server, task_id, "call-stored") == anthropic_key
    assert store.reads == 1


def test_the_sources_in_order_and_what_cannot_be_a_key_is_ignored() -> None:
    redactor = Redactor()
    own, tools = a_test_key(), a_test_key()
    found, ignored = environment_keys({"CODEFLUX_ANTHROPIC_API_KEY": own, "ANTHROPIC_API_KEY": tools,
                                       "OPENAI_API_KEY": "two words", "CODEFLUX_OPENAI_COMPATIBLE_API_KEY": "",
                                       "OTHER_API_KEY": a_test_key()}, redactor=redactor)
    assert found == {ANTHROPIC: EnvironmentKey("CODEFLUX_ANTHROPIC_API_KEY", Secret(own))}
    assert ignored == ("OPENAI_API_KEY", "CODEFLUX_OPENAI_COMPATIBLE_API_KEY")
    assert redactor.redact(f"{own} {tools}") == "[REDACTED] [REDACTED]"  # both are secrets, the unused one too
    # OpenAI's own variable never becomes the key of another (openai-compatible) server
    found, _ = environment_keys({"OPENAI_API_KEY": own + "\n"}, redactor=redactor)
    assert found == {ProviderName.OPENAI: EnvironmentKey("OPENAI_API_KEY", Secret(own))}
    assert found[ProviderName.OPENAI].describe() == "environment (OPENAI_API_KEY)"
