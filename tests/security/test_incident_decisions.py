"""An incident's Dismiss and Propose over the browser connection are a person's decisions on the incident's card
(codeflux/server/confirmations.py): without the value issued with that card, or with another card's value, nothing
is decided (PERMISSION_DENIED) — the incident keeps its state and no task is created; with it, the decision lands
once. Real database, real git repository, the guarded method table the browser connection uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import incidents_pb2 as pb
from codeflux.domain.errors import UnconfirmedDecisionError
from codeflux.server.confirmations import CardConfirmations
from codeflux.services import incidents
from codeflux.services.app import CoordinatorApp
from codeflux.services.registry import Code, MethodTable, UnaryMethod, status_of
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.repos import make_repository
from tests.fixtures.services import CTX, call, service_app

REPORT, SHOW = "/codeflux.v1.IncidentService/Report", "/codeflux.v1.IncidentService/Show"
DISMISS, PROPOSE = "/codeflux.v1.IncidentService/Dismiss", "/codeflux.v1.IncidentService/Propose"


def _traceback(function: str) -> str:
    return ("Traceback (most recent call last):\n"
            '  File "/home/dev/calc/pkg/calc.py", line 2, in ' + function + "\n"
            "    return a + b\n"
            "TypeError: unsupported operand\n")


def _control(key: str) -> common_pb2.MutationControl:
    return common_pb2.MutationControl(idempotency_key=key)


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, incidents.methods)


def _browser(app: CoordinatorApp) -> dict[str, UnaryMethod]:  # type: ignore[type-arg]
    table = CardConfirmations().guard(MethodTable.of(incidents.methods(app)))
    found = {name: table.get(name) for name in (SHOW, DISMISS, PROPOSE)}
    return {name: method for name, method in found.items() if isinstance(method, UnaryMethod)}


def _state(app: CoordinatorApp, incident_id: str) -> str:
    shown = call(app, SHOW, pb.ShowIncidentRequest(incident_id=incident_id))
    assert isinstance(shown, pb.IncidentDetail)
    return shown.incident.state


def _refused(method: UnaryMethod, request: object) -> None:  # type: ignore[type-arg]
    with pytest.raises(UnconfirmedDecisionError) as caught:
        method.handler(CTX, request)
    assert status_of(caught.value).code == Code.PERMISSION_DENIED


def test_a_browser_dismiss_or_proposal_without_the_incidents_card_value_decides_nothing(
        app: CoordinatorApp, tmp_path: Path) -> None:
    repo = make_repository(tmp_path).path
    ids = [call(app, REPORT, pb.ReportIncidentRequest(control=_control(f"r-{name}"), repository_root=str(repo),
                                                      text=_traceback(name))).incident.incident_id
           for name in ("add", "sub")]
    browser = _browser(app)
    card = browser[SHOW].handler(CTX, pb.ShowIncidentRequest(incident_id=ids[0]))
    assert card.dismiss_confirmation and card.propose_confirmation
    assert card.dismiss_confirmation != card.propose_confirmation

    def dismiss(value: str, key: str, incident_id: str = ids[0]) -> pb.DismissIncidentRequest:
        return pb.DismissIncidentRequest(control=_control(key), incident_id=incident_id, reason="flaky",
                                         confirmation=value)

    _refused(browser[DISMISS], dismiss("", "d-1"))  # no value
    _refused(browser[DISMISS], dismiss("forged", "d-2"))
    _refused(browser[DISMISS], dismiss(card.propose_confirmation, "d-3"))  # another decision's value
    _refused(browser[DISMISS], dismiss(card.dismiss_confirmation, "d-4", incident_id=ids[1]))  # another incident
    _refused(browser[PROPOSE], pb.ProposeIncidentTaskRequest(control=_control("p-1"), incident_id=ids[0]))
    assert _state(app, ids[0]) == "new"  # a proposal's task is created with task-proposed in one transaction

    done = browser[DISMISS].handler(CTX, dismiss(card.dismiss_confirmation, "d-5"))  # positive control
    assert done.incident.state == "dismissed" and done.incident.state_reason == "flaky"
    assert not done.dismiss_confirmation and not done.propose_confirmation  # a final state has no decision left
    _refused(browser[DISMISS], dismiss(card.dismiss_confirmation, "d-6"))  # used up

    other = browser[SHOW].handler(CTX, pb.ShowIncidentRequest(incident_id=ids[1]))
    proposal = browser[PROPOSE].handler(CTX, pb.ProposeIncidentTaskRequest(
        control=_control("p-2"), incident_id=ids[1], confirmation=other.propose_confirmation))
    assert proposal.task_id and proposal.detail.incident.state == "task-proposed"
