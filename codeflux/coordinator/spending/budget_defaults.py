"""The default hard budget new tasks are offered (Settings → budget defaults).

Stored as the setting ``budget.default-hard-limit`` (``{"currency": "USD", "minor": 250}`` or
``{"cleared": true}``); each change commits with a ``budget-default-set`` event on the system session in
one transaction. The default is a *suggestion* the composer pre-fills: a task's budget is still set on
the task, exactly, by the person (``SetBudget`` / ``codeflux budget set``) — nothing is spent on a default
nobody saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.events import BudgetDefaultSet
from codeflux.domain.money import Currency, Money
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.settings import put_setting, read_setting

__all__ = ["BudgetDefault", "read_budget_default", "set_budget_default"]

_KEY: Final = "budget.default-hard-limit"


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetDefault:
    hard_limit: Money | None
    revision: int | None  # None: never set


def _from_value(value: object) -> Money | None:
    if not isinstance(value, dict) or value.get("cleared") is True:
        return None
    currency, minor = value.get("currency"), value.get("minor")
    if not isinstance(currency, str) or not isinstance(minor, int) or isinstance(minor, bool):
        raise InvalidValueError(kind="stored budget default", reason="it is not {currency, minor}")
    return Money(minor=minor, currency=Currency.parse(currency))


def read_budget_default(db: Database) -> BudgetDefault:
    row = db.read(lambda view: read_setting(view, _KEY))
    if row is None:
        return BudgetDefault(hard_limit=None, revision=None)
    return BudgetDefault(hard_limit=_from_value(dict(row.value)), revision=row.revision)


def set_budget_default(db: Database, hard_limit: Money | None, *, expected_revision: int | None) -> BudgetDefault:
    """Set (or clear, with None) the default; ``expected_revision`` is the revision read (None: never set)."""
    if hard_limit is not None and hard_limit.minor <= 0:
        raise InvalidValueError(kind="budget default", reason="a hard limit must be more than zero")
    value: dict[str, object] = (
        {"cleared": True} if hard_limit is None else {"currency": hard_limit.currency.code, "minor": hard_limit.minor}
    )

    def work(tx: Transaction) -> int:
        revision = put_setting(tx, _KEY, value, expected_revision=expected_revision)
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=BudgetDefaultSet(
            hard_limit=None if hard_limit is None else str(hard_limit), revision=revision))
        return revision

    return BudgetDefault(hard_limit=hard_limit, revision=db.write(work))
