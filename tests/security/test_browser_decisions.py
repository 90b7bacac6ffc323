"""Decisions on the browser connection answer the card codeflux showed (issue 13 item 2), end to end on a
served coordinator with the scripted demo — the path the web client takes, over the binary envelope.

A client that holds the session (cookie and page key) but not the current card's confirmation value —
a scripted or replayed decision — is refused and the refusal is journaled on the task; the same decision
over the coordinator's Unix socket (the CLI's channel) keeps that socket's authority and needs no value.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import TypeVar

import pytest
from google.protobuf.message import Message

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import product_pb2 as pb
from codeflux.domain.errors import UnconfirmedDecisionError
from codeflux.server.client import EnvelopeClient, call_unary, redeem_launch, unix_channel
from codeflux.services.workspace import create_demo_repository
from codeflux.store.events import read_events_after
from tests.fixtures.browser import demo_requirement, serving

pytestmark = pytest.mark.security

M = TypeVar("M", bound=Message)
TASKS, APPROVALS, REVIEW = "/codeflux.v1.TaskService/", "/codeflux.v1.ApprovalService/", "/codeflux.v1.ReviewService/"
_WAIT_S = 120.0


def control(key: str) -> common_pb2.MutationControl:
    return common_pb2.MutationControl(idempotency_key=key)


async def until(client: EnvelopeClient, task_id: str, ready: object) -> pb.TaskView:
    deadline = time.monotonic() + _WAIT_S
    while True:
        view = await client.call(TASKS + "GetTask", pb.GetTaskRequest(task_id=task_id), pb.TaskView)
        if ready(view):  # type: ignore[operator]
            return view
        if view.state in ("failed", "cancelled") or time.monotonic() > deadline:
            raise AssertionError(f"the task is {view.state}")
        await asyncio.sleep(0.1)


def test_a_decision_without_the_cards_confirmation_is_refused_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(tmp_path / "data", monkeypatch) as (server, app):
        root = create_demo_repository(app)
        session = redeem_launch(server.launch_url())
        socket_channel = unix_channel(server.socket_path)

        async def refused(client: EnvelopeClient, method: str, request: Message, reply: type[M], reason: str) -> None:
            with pytest.raises(UnconfirmedDecisionError, match=f"confirmation is {reason}"):
                await client.call(method, request, reply)

        async def scenario() -> tuple[str, list[str]]:
            async with await EnvelopeClient.connect(server.ws_url, session=session) as client:
                created = await client.call(TASKS + "CreateTask", pb.CreateTaskRequest(
                    control=control("create"), repository_path=str(root), requirement=demo_requirement(str(root))),
                    pb.TaskView)
                task_id = created.task_id
                await client.call(TASKS + "SetBudget", pb.SetBudgetRequest(
                    control=control("budget"), task_id=task_id, choice="set", hard_limit="1.00", currency="USD"),
                    pb.TaskView)
                drafted = await client.call(TASKS + "DraftPlan", pb.DraftPlanRequest(
                    control=control("draft"), task_id=task_id), pb.TaskView)
                plan = drafted.plan
                assert plan.confirmation, "the plan card carries its confirmation on the browser connection"

                # The plan: no value, a forged one, another revision's — refused, nothing approved.
                approve = pb.ApprovePlanRequest(control=control("approve-1"), task_id=task_id, revision=plan.revision,
                                                sha256=plan.sha256)
                await refused(client, TASKS + "ApprovePlan", approve, pb.TaskView, "missing")
                approve.confirmation = "x" * 32
                await refused(client, TASKS + "ApprovePlan", approve, pb.TaskView, "unknown")
                still = await client.call(TASKS + "GetTask", pb.GetTaskRequest(task_id=task_id), pb.TaskView)
                assert (still.state, still.plan.decision) == ("awaiting-plan-approval", "undecided")
                approve = pb.ApprovePlanRequest(control=control("approve-2"), task_id=task_id, revision=plan.revision,
                                                sha256=plan.sha256, confirmation=plan.confirmation)
                approved = await client.call(TASKS + "ApprovePlan", approve, pb.TaskView)
                assert approved.plan.decision == "approved"
                # The identical retry (a reconnect) is answered; a replay under a new key is not.
                assert (await client.call(TASKS + "ApprovePlan", approve, pb.TaskView)).plan.decision == "approved"
                replay = pb.ApprovePlanRequest(control=control("approve-3"), task_id=task_id, revision=plan.revision,
                                               sha256=plan.sha256, confirmation=plan.confirmation)
                await refused(client, TASKS + "ApprovePlan", replay, pb.TaskView, "unknown")

                await client.call(TASKS + "StartTask", pb.StartTaskRequest(
                    control=control("start"), task_id=task_id, plan_revision=plan.revision), pb.TaskView)

                # A tool request: refused without its value, allowed with it; later ones over the Unix socket.
                waiting = await until(client, task_id, lambda v: bool(v.pending_approvals))
                card = waiting.pending_approvals[0]
                assert card.confirmation
                decide = pb.DecideRequest(control=control("decide-1"), task_id=task_id, request_id=card.request_id,
                                          decision="allow-once")
                await refused(client, APPROVALS + "Decide", decide, pb.DecideReply, "missing")
                decide.confirmation = card.confirmation
                assert (await client.call(APPROVALS + "Decide", decide, pb.DecideReply)).outcome == "allowed-once"
                for number in range(2, 8):
                    view = await until(client, task_id,
                                       lambda v: bool(v.pending_approvals) or v.state == "awaiting-review")
                    if view.state == "awaiting-review":
                        break
                    over_socket = pb.DecideRequest(control=control(f"decide-{number}"), task_id=task_id,
                                                   request_id=view.pending_approvals[0].request_id,
                                                   decision="allow-once")  # no confirmation: the socket's authority
                    decided = await asyncio.to_thread(call_unary, socket_channel, APPROVALS + "Decide", over_socket,
                                                      pb.DecideReply)
                    assert decided.outcome == "allowed-once"
                await until(client, task_id, lambda v: v.state == "awaiting-review")

                # The accept: refused without the review's value, and with a value of another card.
                review = await client.call(REVIEW + "GetReview", pb.GetReviewRequest(task_id=task_id), pb.ReviewView)
                assert review.accept_confirmation
                accept = pb.AcceptChangeRequest(control=control("accept-1"), task_id=task_id,
                                                diff_identity=review.diff_identity)
                await refused(client, REVIEW + "AcceptChange", accept, pb.AcceptChangeReply, "missing")
                accept.confirmation = card.confirmation  # a value issued for another card
                await refused(client, REVIEW + "AcceptChange", accept, pb.AcceptChangeReply, "unknown")
                assert (await until(client, task_id, lambda v: True)).state == "awaiting-review"
                accept = pb.AcceptChangeRequest(control=control("accept-2"), task_id=task_id,
                                                diff_identity=review.diff_identity,
                                                confirmation=review.accept_confirmation)
                landed = await client.call(REVIEW + "AcceptChange", accept, pb.AcceptChangeReply)
                assert landed.kind in ("fast-forward", "merge-commit")
                values = [plan.confirmation, card.confirmation, review.accept_confirmation]
                return task_id, values

        task_id, values = asyncio.run(scenario())
        socket_channel.close()
        view = app.db.read(lambda v: v.query_one("SELECT session_id FROM tasks WHERE id = ?", (task_id,)))
        assert view is not None
        events = app.db.read(lambda v: read_events_after(v, session_id=str(view[0]), after_sequence=0, limit=1000))
        refusals = [event.event.to_payload() for event in events if event.kind == "browser-decision-refused"]
        assert [(r["decision"], r["reason"]) for r in refusals] == [
            ("approve-plan", "missing"), ("approve-plan", "unknown"), ("approve-plan", "unknown"),
            ("decide", "missing"), ("accept", "missing"), ("accept", "unknown"),
        ]
        assert all(r["task_id"] == task_id for r in refusals)
        stored = json.dumps(refusals)
        assert not any(value in stored for value in values)  # never the values themselves
