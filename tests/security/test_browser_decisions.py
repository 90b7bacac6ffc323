"""Decisions on the browser connection answer the card codeflux showed (issue 13 item 2), end to end on a
served coordinator with the scripted demo — the path the web client takes, over the binary envelope.

A client that holds the session (cookie and page key) but not the current card's confirmation value —
a scripted or replayed decision — is refused and the refusal is journaled on the task; the same decision
over the coordinator's Unix socket (the CLI's channel) keeps that socket's authority and needs no value.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import time
from pathlib import Path
from typing import TypeVar

import pytest
from google.protobuf.message import Message

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli import start
from codeflux.coordinator.spending.model_approvals import endpoint_approved
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.domain.errors import ProviderError, UnconfirmedDecisionError
from codeflux.domain.money import USD
from codeflux.domain.pricing import Price
from codeflux.domain.providers import ProviderName
from codeflux.server.client import EnvelopeClient, call_unary, redeem_launch, unix_channel
from codeflux.services.workspace import create_demo_repository
from codeflux.store.events import read_events_after
from tests.fixtures.browser import demo_requirement, serving
from tests.fixtures.provider_servers import ProviderServer, json_reply

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


def test_an_endpoint_approval_answers_exactly_its_card_and_lets_the_paused_task_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task pinned to a non-default endpoint pauses before sending anything; its card (and Settings') approves that
    endpoint only with the card's value: no value, a forged one, or a value used for another or an equivalent URL is
    refused and journaled, nothing approved. The right value approves it (``provider approve-endpoint``'s call), the
    card goes, and resuming the task sends its first request to that endpoint."""
    settings_service = "/codeflux.v1.SettingsService/"
    with ProviderServer() as provider_server, serving(tmp_path / "data", monkeypatch) as (server, app):
        parser = argparse.ArgumentParser()
        start.configure(parser)
        app.models = start.CliModelAccess(app.db, parser.parse_args([]))  # `codeflux start` without --provider
        endpoint = f"{provider_server.base_url}/v1"
        provider_server.enqueue(json_reply({"error": {"type": "invalid_request_error", "message": "test"}},
                                           status=400, headers=(("connection", "close"),)))
        PriceCatalog(app.db).set_user_price(  # a free local model: the budget bounds its calls
            provider="openai-compatible", model="local-model", effective_date=dt.date(2026, 1, 1),
            price=Price.from_per_million_tokens(currency=USD, input_per_million="0", output_per_million="0"))
        root = create_demo_repository(app)
        session = redeem_launch(server.launch_url())
        socket_channel = unix_channel(server.socket_path)

        async def refused(client: EnvelopeClient, request: pb.ApproveEndpointRequest, reason: str) -> None:
            with pytest.raises(UnconfirmedDecisionError, match=f"confirmation is {reason}"):
                await client.call(settings_service + "ApproveEndpoint", request, pb.SettingsView)

        async def scenario() -> tuple[str, list[str], pb.TaskView]:
            async with await EnvelopeClient.connect(server.ws_url, session=session) as client:
                other = await client.call(settings_service + "SetProviderChoice", pb.SetProviderChoiceRequest(
                    control=control("choose-other"), provider="openai-compatible", cheap_model="local-model",
                    base_url="http://127.0.0.1:9/v1", no_key=True), pb.SettingsView)
                other_value = other.chosen_endpoint_approval.confirmation
                chosen = await client.call(settings_service + "SetProviderChoice", pb.SetProviderChoiceRequest(
                    control=control("choose"), provider="openai-compatible", cheap_model="local-model",
                    base_url=endpoint, no_key=True), pb.SettingsView)
                assert (chosen.chosen_endpoint_approval.base_url, bool(other_value)) == (endpoint, True)
                created = await client.call(TASKS + "CreateTask", pb.CreateTaskRequest(
                    control=control("create"), repository_path=str(root), requirement=demo_requirement(str(root))),
                    pb.TaskView)
                task_id = created.task_id
                assert (created.provider_source, created.endpoint_approval.base_url) == ("settings", endpoint)
                await client.call(TASKS + "SetBudget", pb.SetBudgetRequest(
                    control=control("budget"), task_id=task_id, choice="set", hard_limit="1.00", currency="USD"),
                    pb.TaskView)
                with pytest.raises(Exception, match="has not been approved"):
                    await client.call(TASKS + "DraftPlan", pb.DraftPlanRequest(control=control("draft"),
                                                                               task_id=task_id), pb.TaskView)
                paused = await client.call(TASKS + "GetTask", pb.GetTaskRequest(task_id=task_id), pb.TaskView)
                card = paused.endpoint_approval
                assert (paused.state, card.provider, card.base_url) == ("paused", "openai-compatible", endpoint)
                assert card.confirmation and not provider_server.requests  # nothing was sent to it

                approve = pb.ApproveEndpointRequest(control=control("approve-1"), provider=card.provider,
                                                    base_url=card.base_url, task_id=task_id)
                await refused(client, approve, "missing")
                approve.confirmation = "x" * 32  # forged
                await refused(client, approve, "unknown")
                approve.confirmation = other_value  # another endpoint's card
                await refused(client, approve, "unknown")
                another = pb.ApproveEndpointRequest(control=control("approve-2"), provider=card.provider,
                                                    base_url="http://127.0.0.1:7/v1", task_id=task_id,
                                                    confirmation=card.confirmation)  # this card, another URL
                await refused(client, another, "unknown")
                another.base_url = endpoint.upper().replace("/V1", "/v1/")  # the same endpoint, written otherwise
                await refused(client, another, "unknown")
                assert not endpoint_approved(app.db, provider=ProviderName.OPENAI_COMPATIBLE, base_url=endpoint)
                assert not endpoint_approved(app.db, provider=ProviderName.OPENAI_COMPATIBLE,
                                             base_url="http://127.0.0.1:7/v1")

                approve = pb.ApproveEndpointRequest(control=control("approve-3"), provider=card.provider,
                                                    base_url=card.base_url, task_id=task_id,
                                                    confirmation=card.confirmation)
                approved = await client.call(settings_service + "ApproveEndpoint", approve, pb.SettingsView)
                assert [(a.provider, a.base_url) for a in approved.endpoint_approvals] == [
                    ("openai-compatible", endpoint)]
                assert not approved.HasField("chosen_endpoint_approval")
                replay = pb.ApproveEndpointRequest(control=control("approve-4"), provider=card.provider,
                                                   base_url=card.base_url, task_id=task_id,
                                                   confirmation=card.confirmation)
                await refused(client, replay, "unknown")  # used up
                after = await client.call(TASKS + "GetTask", pb.GetTaskRequest(task_id=task_id), pb.TaskView)
                assert not after.HasField("endpoint_approval")
                assert [a.available for a in after.actions if a.action == "resume"] == [True]
                with pytest.raises(ProviderError):  # the endpoint's 400 pauses it again: what matters is it went
                    await client.call(TASKS + "ResumeTask", pb.TaskActionRequest(
                        control=control("resume"), task_id=task_id), pb.TaskView)
                return task_id, [card.confirmation, other_value], after

        task_id, values, _ = asyncio.run(scenario())
        # over the Unix socket (the CLI's channel) the socket's authority approves without a card
        over_socket = asyncio.run(asyncio.to_thread(
            call_unary, socket_channel, settings_service + "ApproveEndpoint", pb.ApproveEndpointRequest(
                control=control("socket"), provider="openai-compatible", base_url="http://127.0.0.1:7/v1"),
            pb.SettingsView))
        socket_channel.close()
        assert "http://127.0.0.1:7/v1" in [a.base_url for a in over_socket.endpoint_approvals]
        assert [r.path for r in provider_server.requests] == ["/v1/chat/completions"]  # sent only after the approval
        view = app.db.read(lambda v: v.query_one("SELECT session_id FROM tasks WHERE id = ?", (task_id,)))
        assert view is not None
        events = app.db.read(lambda v: read_events_after(v, session_id=str(view[0]), after_sequence=0, limit=1000))
        refusals = [event.event.to_payload() for event in events if event.kind == "browser-decision-refused"]
        assert [(r["decision"], r["reason"]) for r in refusals] == [("approve-endpoint", "missing")] + [
            ("approve-endpoint", "unknown")] * 5
        assert not any(value in json.dumps(refusals) for value in values)
