"""The JSON documents of ``--json`` (``run``, ``task list``, ``task show``, ``provider list``; ``doctor`` builds its
own from the report): one function per document, from the reply the method table gave.

The shape is a contract (docs/using.md, "JSON output"; ``tests/unit/cli/test_json_documents.py`` pins every key
and type): each document carries ``"format": 1``; a key is never renamed or dropped within a format; money is
``{"amount": "0.0123", "currency": "USD", "minor_units": 123}`` with an exact decimal string (never a float);
what is unknown or absent is ``null``, never 0 or an empty string.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Final

from codeflux.api.v1 import common_pb2, product_pb2

__all__ = [
    "JSON_FORMAT",
    "money_document",
    "money_of",
    "provider_list_document",
    "run_document",
    "task_list_document",
    "task_show_document",
]

JSON_FORMAT: Final = 1
"""The version of every ``--json`` document's shape; raised only by an incompatible change."""

_UNKNOWN: Final = "unknown: "


def money_document(value: common_pb2.MaybeMoney) -> dict[str, object] | None:
    """A known amount as ``{"amount": "0.0123", "currency": "USD", "minor_units": 123}`` (the decimal string is
    exact: built from the integer minor units); an unknown one as None (``null``), never 0."""
    if not value.known:
        return None
    return money_of(value.amount)


def money_of(amount: common_pb2.Money) -> dict[str, object]:
    """An exact amount: its decimal string (from integer minor units, no float on the way), currency, minor units."""
    places = amount.decimal_places
    minor = amount.minor_units
    sign = "-" if minor < 0 else ""
    digits = str(abs(minor)).rjust(places + 1, "0")
    text = f"{sign}{digits[:-places]}.{digits[-places:]}" if places else f"{sign}{digits}"
    return {"amount": text, "currency": amount.currency, "minor_units": minor}


def _text(value: str) -> str | None:
    """An empty proto string means "none": ``null``."""
    return value or None


def _iso(us: int) -> str | None:
    if not us:
        return None
    return dt.datetime.fromtimestamp(us / 1_000_000, tz=dt.UTC).isoformat().replace("+00:00", "Z")


def task_list_document(tasks: Sequence[product_pb2.TaskSummary], *, has_more: bool,
                       next_before: str) -> dict[str, object]:
    """``codeflux task list --json``: the listed tasks, newest first, and how to get the next page."""
    return {
        "format": JSON_FORMAT,
        "tasks": [{
            "task_id": task.task_id,
            "title": task.title,
            "state": task.state,
            "revision": task.revision,
            "repository_root": task.repository_root,
            "session_id": task.session_id,
            "needs_attention": task.needs_attention,
            "created_at": _iso(task.created_at_us),
        } for task in tasks],
        "has_more": has_more,
        "next_before": _text(next_before),
    }


def task_show_document(view: product_pb2.TaskView,
                       recovery: product_pb2.RecoveryView | None) -> dict[str, object]:
    """``codeflux task show --json``: the task and, when it needs recovery, the assessment."""
    return {"format": JSON_FORMAT, "task": task_document(view),
            "recovery": None if recovery is None else _recovery(recovery)}


def run_document(view: product_pb2.TaskView, *, exit_code: int, diff_identity: str | None) -> dict[str, object]:
    """``codeflux run --json``: how the run ended (the exit code of the one table), the task as ``task show``
    gives it, and the identity of the diff under review (what ``task accept --identity`` takes), if any."""
    return {"format": JSON_FORMAT, "exit_code": exit_code, "task": task_document(view),
            "diff_identity": diff_identity}


def provider_list_document(statuses: Sequence[product_pb2.ProviderStatus]) -> dict[str, object]:
    """``codeflux provider list --json``: per provider whether a key is stored (``null`` when the credential store
    could not be asked, with why) and whether codeflux recorded a reference to it. Never the key."""
    providers = []
    for status in statuses:
        unknown = status.detail.startswith(_UNKNOWN)
        providers.append({
            "name": status.name,
            "credential_stored": None if unknown else status.credential_stored,
            "reference_recorded": status.reference_recorded,
            "unknown_reason": status.detail[len(_UNKNOWN):] if unknown else None,
        })
    return {"format": JSON_FORMAT, "providers": providers}


def task_document(view: product_pb2.TaskView) -> dict[str, object]:
    """One task: identity, state, repository and worktree, plan, attempt, budget, pending approvals, actions."""
    return {
        "task_id": view.task_id,
        "title": view.title,
        "requirement": view.requirement,
        "state": view.state,
        "revision": view.revision,
        "repository_root": view.repository_root,
        "base_revision": _text(view.base_revision),
        "worktree": _text(view.worktree),
        "worktree_exists": view.worktree_exists,
        "worktree_disposal": _disposal(view.worktree_disposal) if view.HasField("worktree_disposal") else None,
        "session_id": view.session_id,
        "provider_label": _text(view.provider_label),
        "provider_basis": _text(view.provider_basis),
        "provider_source": _text(view.provider_source),
        "provider_reason": _text(view.provider_reason),
        "endpoint_approval": ({"provider": view.endpoint_approval.provider,
                               "base_url": view.endpoint_approval.base_url}
                              if view.HasField("endpoint_approval") else None),
        "run_active": view.run_active,
        "last_outcome": _text(view.last_outcome),
        "through_sequence": view.through_sequence,
        "plan": _plan(view.plan) if view.HasField("plan") else None,
        "attempt": _attempt(view.attempt) if view.HasField("attempt") else None,
        "budget": _budget(view.budget) if view.budget.set else None,
        "pending_approvals": [_pending(p) for p in view.pending_approvals],
        "actions": [{"action": a.action, "available": a.available, "reason": _text(a.reason)} for a in view.actions],
    }


def _plan(plan: product_pb2.PlanView) -> dict[str, object]:
    return {
        "revision": plan.revision,
        "sha256": plan.sha256,
        "decision": plan.decision,
        "feedback": _text(plan.feedback),
        "author_label": _text(plan.author_label),
        "scope_summary": plan.scope_summary,
        "scope_paths": list(plan.scope_paths),
        "steps": [{"title": s.title, "detail": s.detail, "expected_files": list(s.expected_files)}
                  for s in plan.steps],
        "examples": list(plan.examples),
        "open_questions": sum(1 for q in plan.questions if q.status == "open"),
        "forecast_cost": _range(plan.forecast.cost) if plan.HasField("forecast") else None,
    }


def _range(cost: common_pb2.MoneyRange) -> dict[str, object]:
    return {"low": money_document(cost.low), "high": money_document(cost.high)}


def _attempt(attempt: product_pb2.AttemptView) -> dict[str, object]:
    return {"attempt": attempt.attempt, "plan_revision": attempt.plan_revision, "open": attempt.open,
            "stopped_at": _text(attempt.stopped_at)}


def _price_use(use: product_pb2.PriceUseView) -> dict[str, object]:
    """Which price revision priced which calls; every key null for the calls that had no price."""
    def text(value: str) -> str | None:
        return value if use.priced else None

    return {"snapshot_id": use.snapshot_id if use.priced else None, "provider": text(use.provider),
            "model": text(use.model), "revision": use.revision if use.priced else None, "source": text(use.source),
            "source_detail": text(use.source_detail), "effective_date": text(use.effective_date),
            "recorded_at": text(use.recorded_at), "request_ids": list(use.request_ids)}


def _budget(budget: product_pb2.BudgetView) -> dict[str, object]:
    return {
        "revision": budget.revision,
        "hard_limit": money_of(budget.hard_limit),
        "warning": money_of(budget.warning) if budget.HasField("warning") and budget.warning.currency else None,
        "spent": money_document(budget.spent),
        "reserved": money_document(budget.reserved),
        "remaining": money_document(budget.remaining),
        "tokens_used": budget.tokens_used,
        "tokens_reserved": budget.tokens_reserved,
        "token_limit": budget.token_limit if budget.token_limit_set else None,
        "exhausted": budget.exhausted,
        "pending_decisions": list(budget.pending_decisions),
        "prices": [_price_use(use) for use in budget.prices],
    }


def _pending(pending: product_pb2.PendingApproval) -> dict[str, object]:
    return {
        "request_id": pending.request_id,
        "tool": pending.tool,
        "arguments": [{"name": a.name, "value": a.value} for a in pending.arguments],
        "capabilities": list(pending.capabilities),
        "scope": pending.scope,
        "reason": pending.reason,
        "operation_identity": pending.operation_identity,
    }


def _disposal(disposal: product_pb2.WorktreeDisposalView) -> dict[str, object]:
    return {"removed": disposal.removed, "branch_deleted": disposal.branch_deleted,
            "checkpoint_refs_deleted": disposal.checkpoint_refs_deleted, "refusal": _text(disposal.refusal),
            "detail": _text(disposal.detail)}


def _recovery(view: product_pb2.RecoveryView) -> dict[str, object]:
    return {
        "known": list(view.known),
        "ambiguous": [{"item_id": a.item_id, "kind": a.kind, "summary": a.summary, "outcome": _text(a.outcome)}
                      for a in view.ambiguous],
        "recommended": _text(view.recommended),
        "why": _text(view.why),
        "allowed": list(view.allowed),
        "refused": [{"action": r.action, "reason": r.reason} for r in view.refused],
    }
