"""Decisions a person records before model calls may go ahead: an endpoint, a ladder rung.

- :func:`approve_model_endpoint` — a non-default provider base URL is used only after the person approved
  that exact URL, normalized first (userinfo, query and fragment are refused before anything is recorded).
- :func:`approve_ladder_rung` — ``capable:max`` asks before its first call in a task.

Each is one transaction with its event, and idempotent: approving again records nothing new.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.events import EndpointApproved, LadderRungApproved
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import Rung
from codeflux.domain.providers import ProviderName
from codeflux.providers.endpoints import is_default_endpoint, normalize_base_url
from codeflux.store import prices as rows
from codeflux.store.database import Database, Transaction, now_us
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.tasks import require_task

__all__ = ["approve_ladder_rung", "approve_model_endpoint", "endpoint_approved"]

_DECIDERS: Final = frozenset({"user", "headless-policy"})


def approve_model_endpoint(
    db: Database, *, provider: ProviderName, base_url: str, approved_by: str = "user", clock: Callable[[], int] = now_us
) -> str:
    """Record that the person approved ``base_url`` (normalized first; refused URLs never get here) for
    ``provider``, with an ``endpoint-approved`` event; returns the normalized URL. Idempotent."""
    if approved_by not in _DECIDERS:
        raise InvalidValueError(kind="endpoint approval", reason="a person or the headless policy approves")
    normalized = normalize_base_url(provider, base_url)

    def work(tx: Transaction) -> None:
        if rows.insert_endpoint_approval(tx, provider=provider.value, base_url=normalized, approved_by=approved_by,
                                         at_us=clock()):
            append_event(tx, session_id=SYSTEM_SESSION_ID,
                         event=EndpointApproved(provider=provider.value, base_url=normalized, by=approved_by))

    db.write(work)
    return normalized


def approve_ladder_rung(
    db: Database, *, task_id: TaskId, rung: Rung, approved_by: str = "user", clock: Callable[[], int] = now_us
) -> None:
    """Record that the person allows spending on ``rung`` (only ``capable:max`` asks) in ``task_id``."""
    if approved_by not in _DECIDERS:
        raise InvalidValueError(kind="rung approval", reason="a person or the headless policy approves")
    if not rung.asks_before_spending:
        raise InvalidValueError(kind="rung approval", reason=f"{rung} does not ask before spending")

    def work(tx: Transaction) -> None:
        task = require_task(tx, task_id)
        if rows.insert_rung_approval(tx, task_id=task_id, rung=str(rung), approved_by=approved_by, at_us=clock()):
            append_event(tx, session_id=task.session_id,
                         event=LadderRungApproved(task_id=task_id, rung=str(rung), by=approved_by))

    db.write(work)


def endpoint_approved(db: Database, *, provider: ProviderName, base_url: str) -> bool:
    """Whether codeflux may send requests to ``base_url`` for ``provider``: its default endpoint, or one approved
    (:func:`approve_model_endpoint`), compared in normalized form."""
    url = normalize_base_url(provider, base_url)
    return is_default_endpoint(provider, url) or db.read(
        lambda view: rows.is_endpoint_approved(view, provider=provider.value, base_url=url))
