"""``SessionService/IssueLaunchLink`` (what ``codeflux open`` calls): a fresh one-time link for the served UI,
issued only over the coordinator's Unix socket — never to a browser connection, never in process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2
from codeflux.domain.errors import InvalidValueError, NotFoundError, PrerequisiteError
from codeflux.server.client import EnvelopeClient, call_unary, redeem_launch, unix_channel
from codeflux.server.serve import start_in_thread
from codeflux.services import session
from codeflux.services.app import CoordinatorApp
from codeflux.services.registry import UNIX_SOCKET, CallContext, MethodTable, UnaryMethod
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.fixtures.service_runs import Coordinator, call, control
from tests.fixtures.transport_servers import NoModelCalls

ISSUE = "/codeflux.v1.SessionService/IssueLaunchLink"


def test_a_link_is_issued_over_the_socket_only_and_redeems_once(tmp_path: Path) -> None:
    location = DataLocation(directory=tmp_path / "data")
    db = open_store(location, create=True, migrate=True)
    app = CoordinatorApp(db=db, location=location, models=NoModelCalls(), version="test")
    table = MethodTable.of(session.methods(app))
    try:
        with start_in_thread(table, app=app) as server:
            with unix_channel(server.socket_path) as channel:
                link = call_unary(channel, ISSUE, product_pb2.IssueLaunchLinkRequest(), product_pb2.LaunchLink)
            assert link.origin == server.origin and link.url.startswith(f"{server.origin}/launch?token=")
            assert link.valid_seconds == 120
            redeem_launch(link.url)  # the socket's link signs a browser in (the positive control) …
            with pytest.raises(PrerequisiteError):
                redeem_launch(link.url)  # … once
            browser = redeem_launch(server.launch_url())

            async def from_the_browser() -> None:
                async with await EnvelopeClient.connect(server.ws_url, session=browser) as client:
                    await client.call(ISSUE, product_pb2.IssueLaunchLinkRequest(), product_pb2.LaunchLink)

            with pytest.raises(PrerequisiteError, match="only to `codeflux open`"):
                asyncio.run(from_the_browser())  # a signed-in tab cannot mint links
        # In process (no coordinator serving), or once it stopped serving: no link, and `codeflux start` named.
        method = table.get(ISSUE)
        assert isinstance(method, UnaryMethod)
        with pytest.raises(PrerequisiteError, match="only to `codeflux open`"):
            method.handler(CallContext(transport="in-process", connection_id="t"), product_pb2.IssueLaunchLinkRequest())
        assert app.launch_link is None
        with pytest.raises(PrerequisiteError, match="run `codeflux start`"):
            method.handler(CallContext(transport=UNIX_SOCKET, connection_id="t"), product_pb2.IssueLaunchLinkRequest())
    finally:
        db.close()


def test_a_link_for_a_task_leads_to_its_page_and_only_for_a_task_that_exists(coordinator: Coordinator) -> None:
    """A second tab or a bookmark of ``/tasks/<id>`` has no page key: ``codeflux open --task ID`` is its way in."""
    created = call(coordinator, "TaskService/CreateTask", product_pb2.CreateTaskRequest(
        control=control(), repository_path=str(coordinator.repo), requirement="Make add() handle negatives."))
    assert isinstance(created, product_pb2.TaskView)
    with start_in_thread(coordinator.table, app=coordinator.app) as server:
        with unix_channel(server.socket_path) as channel:
            link = call_unary(channel, ISSUE, product_pb2.IssueLaunchLinkRequest(task_id=created.task_id),
                              product_pb2.LaunchLink)
            plain = call_unary(channel, ISSUE, product_pb2.IssueLaunchLinkRequest(), product_pb2.LaunchLink)
            with pytest.raises(InvalidValueError, match="task id"):
                call_unary(channel, ISSUE, product_pb2.IssueLaunchLinkRequest(task_id="../settings"),
                           product_pb2.LaunchLink)
            with pytest.raises(NotFoundError):
                call_unary(channel, ISSUE, product_pb2.IssueLaunchLinkRequest(task_id="tsk_" + "0" * 32),
                           product_pb2.LaunchLink)
        assert link.url.startswith(f"{server.origin}/launch?token=")
        assert link.url.endswith(f"&to=%2Ftasks%2F{created.task_id}") and "&to=" not in plain.url
        redeem_launch(link.url)  # it signs a browser in like any link (its page is tested in tests/unit/server)
