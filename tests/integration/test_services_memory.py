"""MemoryService through its method table, on a real database and a real git repository registered as codeflux
registers one: verdicts against the checkout as it is now, provenance and history, a person's invalidation
cascading in one transaction (and refused once quarantined), the export; and the browser's card for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import memory_pb2 as pb
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.errors import UnconfirmedDecisionError
from codeflux.domain.memory import MemoryKind, Toolchain
from codeflux.gitwork.repository import open_repository
from codeflux.memory.checkout import probe_toolchain
from codeflux.memory.learn import learn_file_test_map, learn_repository_fact
from codeflux.memory.recall import RecallContext, recall
from codeflux.server.confirmations import CardConfirmations
from codeflux.services import memory
from codeflux.services.app import CoordinatorApp
from codeflux.services.registry import Code, MethodTable
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.repos import make_repository, write_files
from tests.fixtures.services import CTX, call, refusal, service_app

LIST, SHOW = "/codeflux.v1.MemoryService/List", "/codeflux.v1.MemoryService/Show"
INVALIDATE, EXPORT = "/codeflux.v1.MemoryService/Invalidate", "/codeflux.v1.MemoryService/Export"
CONFIRM = "/codeflux.v1.MemoryService/Confirm"


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, memory.methods)


@pytest.fixture
def repo(tmp_path: Path, app: CoordinatorApp) -> Path:
    path = make_repository(tmp_path).path
    TaskService(app.db, worktrees_root=app.location.worktrees).register_repository(open_repository(path))
    return path


def _invalidate(entry_id: str, reason: str, key: str = "inv-1") -> pb.InvalidateMemoryRequest:
    return pb.InvalidateMemoryRequest(control=common_pb2.MutationControl(idempotency_key=key), entry_id=entry_id,
                                      reason=reason)


def test_entries_show_their_verdict_provenance_and_a_person_invalidates_a_chain(app: CoordinatorApp,
                                                                              repo: Path) -> None:
    tools = probe_toolchain(repo)
    mapping = learn_file_test_map(app.db, root=repo, file="pkg/calc.py", tests=["tests/test_calc.py::test_add"])
    command = learn_repository_fact(app.db, root=repo, topic="test-command", fact="pytest tests/test_calc.py",
                                    derived_from=[mapping.entry_id], toolchain=tools)
    listed = call(app, LIST, pb.ListMemoryRequest())
    assert isinstance(listed, pb.MemoryList)
    assert [(e.entry_id, e.verdict.applicable, e.verdict.reason) for e in listed.entries] == [
        (command.entry_id.value, True, "applicable"), (mapping.entry_id.value, True, "applicable")]

    write_files(repo, {"tests/test_calc.py": "def test_add():\n    assert True\n"})
    changed = call(app, SHOW, pb.ShowMemoryRequest(entry_id=mapping.entry_id.value))
    assert isinstance(changed, pb.MemoryEntryDetail)
    assert (changed.entry.verdict.reason, changed.entry.state) == ("source-changed", "active")  # shown, not recorded
    assert [(e.kind, e.dependent_id, e.other_state) for e in changed.edges] == [
        ("derived-from", command.entry_id.value, "active")]

    done = call(app, INVALIDATE, _invalidate(mapping.entry_id.value, "the covering test was rewritten"))
    assert isinstance(done, pb.MemoryInvalidationView)
    assert list(done.quarantined_ids) == [command.entry_id.value] and not done.flagged_ids
    assert done.detail.entry.state == "quarantined" and done.detail.entry.state_cause == "person"
    assert [h.state for h in done.detail.history] == ["active", "quarantined"]
    derived = call(app, SHOW, pb.ShowMemoryRequest(entry_id=command.entry_id.value))
    assert isinstance(derived, pb.MemoryEntryDetail)
    assert (derived.entry.state, derived.entry.verdict.applicable) == ("quarantined", False)
    assert "the covering test was rewritten" in derived.entry.state_reason
    assert call(app, INVALIDATE, _invalidate(mapping.entry_id.value, "the covering test was rewritten")) == done
    code, message = refusal(app, INVALIDATE, _invalidate(mapping.entry_id.value, "again", key="inv-2"))
    assert code == Code.FAILED_PRECONDITION and "quarantined" in message
    assert refusal(app, INVALIDATE, _invalidate(command.entry_id.value, "  ", key="inv-3"))[0] == Code.INVALID_ARGUMENT


def test_an_entry_of_a_repository_with_no_known_checkout_is_not_checked_and_export_holds_everything(
    app: CoordinatorApp, tmp_path: Path,
) -> None:
    unregistered = make_repository(tmp_path / "elsewhere").path
    fact = learn_repository_fact(app.db, root=unregistered, topic="package-layout", fact="flat",
                                 toolchain=Toolchain.of({"python": "3.11"}))
    listed = call(app, LIST, pb.ListMemoryRequest(query='layout" OR NEAR(*'))
    assert isinstance(listed, pb.MemoryList)
    assert [(e.entry_id, e.verdict.checked, e.verdict.reason) for e in listed.entries] == [
        (fact.entry_id.value, False, "not-checked")]
    assert refusal(app, LIST, pb.ListMemoryRequest(kind="vector"))[0] == Code.INVALID_ARGUMENT
    exported = call(app, EXPORT, pb.ExportMemoryRequest())
    assert isinstance(exported, pb.MemoryExport) and exported.entries == 1
    document = json.loads(exported.document_json)
    assert document["format"] == "codeflux-memory-export"
    [entry] = document["entries"]
    assert entry["id"] == fact.entry_id.value and entry["states"][0]["state"] == "active"


def test_the_browser_invalidates_only_with_the_card_of_the_entry_as_it_was_shown(app: CoordinatorApp,
                                                                                 repo: Path) -> None:
    fact = learn_repository_fact(app.db, root=repo, topic="test-command", fact="pytest -q")
    cards = CardConfirmations()
    table = cards.guard(MethodTable.of(memory.methods(app)))
    show, invalidate = table.get(SHOW), table.get(INVALIDATE)
    detail = show.handler(CTX, pb.ShowMemoryRequest(entry_id=fact.entry_id.value))  # type: ignore[union-attr]
    assert detail.invalidate_confirmation

    with pytest.raises(UnconfirmedDecisionError):
        invalidate.handler(CTX, _invalidate(fact.entry_id.value, "wrong"))  # type: ignore[union-attr]
    assert call(app, SHOW, pb.ShowMemoryRequest(entry_id=fact.entry_id.value)).entry.state == "active"  # type: ignore[attr-defined]

    request = _invalidate(fact.entry_id.value, "wrong", key="inv-card")
    request.confirmation, request.state_since_us = detail.invalidate_confirmation, detail.entry.state_since_us
    done = invalidate.handler(CTX, request)  # type: ignore[union-attr]
    assert done.detail.entry.state == "quarantined" and not done.detail.invalidate_confirmation


def test_a_person_keeps_an_entry_flagged_for_review_and_only_such_an_entry(app: CoordinatorApp, repo: Path) -> None:
    tools = probe_toolchain(repo)
    root = learn_repository_fact(app.db, root=repo, topic="test-command", fact="pytest -q", toolchain=tools)
    influenced = learn_repository_fact(app.db, root=repo, topic="package-layout", fact="src layout",
                                       influenced_by=[root.entry_id], toolchain=tools)
    usable = recall(app.db, "layout", RecallContext(root=repo, kind=MemoryKind.REPOSITORY_FACT)).usable
    assert [item.entry.entry_id for item in usable] == [influenced.entry_id]  # positive control: used before

    done = call(app, INVALIDATE, _invalidate(root.entry_id.value, "the command changed"))
    assert isinstance(done, pb.MemoryInvalidationView) and list(done.flagged_ids) == [influenced.entry_id.value]
    assert recall(app.db, "layout", RecallContext(root=repo, kind=MemoryKind.REPOSITORY_FACT)).usable == ()
    cards = CardConfirmations()
    table = cards.guard(MethodTable.of(memory.methods(app)))
    shown = table.get(SHOW).handler(CTX, pb.ShowMemoryRequest(entry_id=influenced.entry_id.value))  # type: ignore[union-attr]
    assert shown.entry.state == "needs-review" and shown.confirm_confirmation
    with pytest.raises(UnconfirmedDecisionError):  # the browser keeps it only by answering that card
        table.get(CONFIRM).handler(CTX, _confirm(influenced.entry_id.value, "still true"))  # type: ignore[union-attr]

    kept = call(app, CONFIRM, _confirm(influenced.entry_id.value, "the layout did not change"))
    assert isinstance(kept, pb.MemoryEntryDetail)
    assert (kept.entry.state, kept.entry.state_cause, kept.entry.state_reason) == (
        "active", "person", "the layout did not change")
    assert [h.state for h in kept.history] == ["active", "needs-review", "active"]
    usable = recall(app.db, "layout", RecallContext(root=repo, kind=MemoryKind.REPOSITORY_FACT)).usable
    assert [item.entry.entry_id for item in usable] == [influenced.entry_id]  # used again

    for entry_id, key in ((influenced.entry_id, "k-2"), (root.entry_id, "k-3")):  # active, quarantined: refused
        code, message = refusal(app, CONFIRM, _confirm(entry_id.value, "keep", key=key))
        assert code == Code.FAILED_PRECONDITION and "memory entry" in message
    assert refusal(app, CONFIRM, _confirm(influenced.entry_id.value, " ", key="k-4"))[0] == Code.INVALID_ARGUMENT
    quarantined = call(app, SHOW, pb.ShowMemoryRequest(entry_id=root.entry_id.value))
    assert quarantined.entry.state == "quarantined"  # type: ignore[attr-defined]


def _confirm(entry_id: str, reason: str, key: str = "keep-1") -> pb.ConfirmMemoryRequest:
    return pb.ConfirmMemoryRequest(control=common_pb2.MutationControl(idempotency_key=key), entry_id=entry_id,
                                   reason=reason)
