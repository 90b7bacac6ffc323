"""The closed event registry: one payload class per kind, and every shape ever written still decodes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from codeflux.domain.events import (
    EVENT_TYPES,
    AuthorityDecided,
    EventKind,
    EventPayload,
    ModelCallRefused,
    TaskCreated,
    TaskStateChanged,
    ToolOutput,
    UnknownEvent,
    WorktreeKept,
    decode_event,
    event_payload_keys,
)
from codeflux.domain.ids import ApprovalId, DecisionId, TaskId, ToolRequestId
from codeflux.domain.tasks import TaskState

TASK = "tsk_0123456789abcdef"
REQUEST = "treq_0123456789abcdef"

# Shapes of kinds the captured journal (tests/fixtures/journal_captured.json) does not hold, as their call
# sites write them today.
TODAYS_SHAPES: dict[str, dict[str, Any]] = {
    "accept-conflicted": {"task_id": TASK, "diff_identity": "d" * 64, "branch": "main",
                          "conflicting_paths": ["a.py", "b.py"]},
    "budget-acknowledged": {"task_id": TASK, "entries": [3, 4], "by": "user"},
    "budget-default-set": {"hard_limit": None, "revision": 2},
    "budget-exhausted": {"task_id": TASK, "hard_limit_minor": 100, "spent_minor": 90, "reserved_minor": 10,
                         "currency": "USD", "spent": "$0.90", "remaining": "$0.00"},
    "budget-warning": {"task_id": TASK, "warning_minor": 50, "spent_minor": 60},
    "effect-outcome-recorded": {"task_id": TASK, "item": "exe_1", "kind": "tool-execution", "outcome": "happened",
                                "by": "user"},
    "endpoint-approved": {"provider": "openai-compatible", "base_url": "http://127.0.0.1:8080/v1", "by": "user"},
    "ladder-rung-approved": {"task_id": TASK, "rung": "capable:max", "by": "user"},
    "browser-decision-refused": {"task_id": TASK, "decision": "decide", "subject": REQUEST, "reason": "missing"},
    "model-call-reconciled": {"request_id": "mreq_1", "state": "outcome-unknown"},
    "plan-sent-back": {"task_id": TASK, "revision": 1, "sha256": "a" * 64, "by": "user"},
    "provider-credential-deleted": {"provider": "anthropic"},
    "provider-credential-stored": {"provider": "anthropic", "rotated": False},
    "recovery-assessed": {"task_id": TASK, "assessment_id": 1, "recommended": "reconcile", "ambiguous": ["exe_1"]},
    "authority-decided": {"request_id": REQUEST, "decision_id": "dec_0123456789abcdef", "outcome": "denied",
                          "decided_by": "user", "denied": ["network:example.com"],
                          "refused_requests": ["treq_aaaaaaaaaaaaaaaa"]},
    "tool-output": {"request_id": REQUEST, "execution_id": "exe_1", "stream": "stdout", "text": "",
                    "offset": 65536, "stopped": "live output stops after 65536 characters"},
    "model-call-refused": {"task_id": TASK, "refusal": "BudgetExhaustedError", "reason": "no budget left",
                           "reserve": "$0.02"},
}

# Shapes earlier versions of this repository wrote (see `git log -p` on the call sites): a key added
# later is missing here.
EARLIER_SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("task-created", {"task_id": TASK, "state": "draft"}),
    ("task-state-changed", {"task_id": TASK, "from": "draft", "to": "forecasting", "revision": 1}),
    ("worktree-removed", {"task_id": TASK, "path": "/w", "refusal": None, "detail": "removed", "branch_deleted": True}),
    ("worktree-kept", {"task_id": TASK, "path": "/w", "refusal": "unsaved-work", "detail": "kept",
                       "branch_deleted": False}),
    ("authority-decided", {"request_id": REQUEST, "decision_id": "dec_0123456789abcdef", "outcome": "allowed-once",
                           "decided_by": "user"}),
    ("model-call-refused", {"task_id": TASK, "refusal": "EndpointApprovalRequiredError", "reason": "approve it"}),
]


def test_every_kind_has_exactly_one_frozen_slotted_keyword_only_payload_class() -> None:
    assert set(EVENT_TYPES) == set(EventKind)
    for kind, payload_type in EVENT_TYPES.items():
        assert payload_type.KIND is kind
        params = payload_type.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen and "__slots__" in payload_type.__dict__, payload_type
        assert all(item.kw_only for item in dataclasses.fields(payload_type)), payload_type


@pytest.mark.parametrize("kind", sorted(TODAYS_SHAPES))
def test_todays_shapes_decode_to_their_class_and_encode_back_unchanged(kind: str) -> None:
    decoded = decode_event(kind, TODAYS_SHAPES[kind])
    assert isinstance(decoded, EventPayload), getattr(decoded, "problem", "")
    assert kind == decoded.KIND
    assert decoded.to_payload() == TODAYS_SHAPES[kind]


@pytest.mark.parametrize(("kind", "payload"), EARLIER_SHAPES, ids=[kind for kind, _ in EARLIER_SHAPES])
def test_shapes_earlier_versions_wrote_still_decode(kind: str, payload: dict[str, Any]) -> None:
    decoded = decode_event(kind, payload)
    assert isinstance(decoded, EventPayload), getattr(decoded, "problem", "")
    assert {key: value for key, value in decoded.to_payload().items() if key in payload} == payload


def test_keys_added_later_read_as_none_and_are_written_from_now_on() -> None:
    old = decode_event("task-state-changed", {"task_id": TASK, "from": "draft", "to": "ready", "revision": 3})
    assert old == TaskStateChanged(task_id=TaskId.parse(TASK), from_state=TaskState.DRAFT, to_state=TaskState.READY,
                                   revision=3, reason=None, actor=None)
    created = TaskCreated(task_id=TaskId.parse(TASK), state=TaskState.DRAFT).to_payload()
    assert created == {"task_id": TASK, "state": "draft", "repository_id": None, "title": None}
    kept = decode_event("worktree-kept", EARLIER_SHAPES[3][1])
    assert isinstance(kept, WorktreeKept) and kept.checkpoint_refs_deleted is None


def test_conditional_keys_are_written_only_when_they_have_a_value() -> None:
    decided = AuthorityDecided(request_id=ToolRequestId.parse(REQUEST), decision_id=DecisionId.parse("dec_12345678"),
                               outcome="allowed-once", decided_by="user")
    assert set(decided.to_payload()) == {"request_id", "decision_id", "outcome", "decided_by"}
    granted = dataclasses.replace(decided, approval_id=ApprovalId.parse("apr_12345678"))
    assert granted.to_payload()["approval_id"] == "apr_12345678"
    chunk = ToolOutput(request_id=ToolRequestId.parse(REQUEST), execution_id="exe_1", stream="stdout", text="hi",
                       offset=0)
    assert "stopped" not in chunk.to_payload()
    refused = ModelCallRefused(task_id=TaskId.parse(TASK), refusal="X", reason="y")
    assert "reserve" not in refused.to_payload()


def test_a_kind_this_codeflux_does_not_know_is_kept_whole_for_display() -> None:
    payload = {"widget": "spun", "n": 3}
    decoded = decode_event("widget-spun", payload)
    assert decoded == UnknownEvent(kind="widget-spun", payload=payload,
                                   problem="'widget-spun' is not an event kind this codeflux knows")
    assert decoded.to_payload() == payload


@pytest.mark.parametrize(("payload", "problem"), [
    ({"task_id": TASK, "from": "draft", "to": "ready"}, "'revision' is missing"),
    ({"task_id": TASK, "from": "draft", "to": "ready", "revision": "3"}, "'revision' is not an integer"),
    ({"task_id": TASK, "from": "draft", "to": "nowhere", "revision": 3}, "'to' is not one of the TaskState values"),
    ({"task_id": "run_0123456789", "from": "draft", "to": "ready", "revision": 3}, "task id"),
    (["not", "an", "object"], "not a JSON object"),
])
def test_a_payload_that_does_not_fit_its_kind_decodes_to_an_unknown_event_naming_why(
    payload: object, problem: str
) -> None:
    decoded = decode_event("task-state-changed", payload)
    assert isinstance(decoded, UnknownEvent) and decoded.kind == "task-state-changed"
    assert problem in decoded.problem


def test_keys_a_newer_codeflux_added_are_ignored_on_read() -> None:
    decoded = decode_event("model-call-started", {"request_id": "mreq_1", "added_later": True})
    assert isinstance(decoded, EventPayload) and decoded.to_payload() == {"request_id": "mreq_1"}


def test_payload_keys_list_every_key_including_renamed_and_conditional_ones() -> None:
    assert event_payload_keys(EventKind.TASK_STATE_CHANGED) == ("task_id", "from", "to", "revision", "reason", "actor")
    assert event_payload_keys(EventKind.AUTHORITY_DECIDED)[-4:] == ("approval_id", "denied", "refused_requests",
                                                                    "repository_approval_id")
