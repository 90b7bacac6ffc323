"""The prices in force: shipped defaults merged with the user's recorded revisions.

The newest ``user`` revision of a model (``codeflux prices set``) wins; else the shipped default from
:mod:`codeflux.providers.prices`, which is recorded as a ``shipped`` revision the first time a call is
priced with it, so every model request points at the exact rates it used. A model with neither has no
price: its calls' cost is unknown, never 0.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from codeflux.domain.events import PriceSet
from codeflux.domain.ids import TaskId
from codeflux.domain.pricing import Price, PriceSource
from codeflux.providers.prices import DEFAULT_PRICE_SNAPSHOTS, PriceSnapshot
from codeflux.store import prices as rows
from codeflux.store.database import Database, ReadView, Transaction, now_us
from codeflux.store.events import SYSTEM_SESSION_ID, append_event

__all__ = ["PriceCatalog", "PriceListing", "PriceUse", "merge_price_listings"]

PriceUse = rows.PriceUse


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceListing:
    """One model's rates in force: from a user revision, or the shipped default (``revision`` None
    until a call was priced with it)."""

    provider: str
    model: str
    aliases: tuple[str, ...]
    price: Price
    effective_date: dt.date
    source: PriceSource
    source_detail: str
    revision: int | None


class PriceCatalog:
    """Shipped defaults merged with the user's recorded revisions."""

    def __init__(
        self, db: Database, *, shipped: Sequence[PriceSnapshot] = DEFAULT_PRICE_SNAPSHOTS,
        clock: Callable[[], int] = now_us,
    ) -> None:  # fmt: skip
        self._db = db
        self._shipped = tuple(shipped)
        self._clock = clock
        # (provider, model) -> (the newest revision's id when it was read, the revision in force then)
        self._in_force: dict[tuple[str, str], tuple[int, rows.PriceRevisionRow | None]] = {}

    def list_prices(self, provider: str | None = None) -> list[PriceListing]:
        """Every shipped model and every model with a user revision, by provider and model."""
        users = self._db.read(
            lambda view: rows.latest_price_revisions(view, source=PriceSource.USER, provider=provider))
        return merge_price_listings(self._shipped, users, provider=provider)

    def set_user_price(
        self, *, provider: str, model: str, price: Price, effective_date: dt.date, detail: str = "codeflux prices set"
    ) -> rows.PriceRevisionRow:
        """Record ``price`` as the next revision of ``model`` (source ``user``) with a ``price-set`` event."""

        def work(tx: Transaction) -> rows.PriceRevisionRow:
            row = rows.insert_price_revision(tx, provider=provider, model=model, source=PriceSource.USER,
                                             source_detail=detail, price=price, effective_date=effective_date,
                                             at_us=self._clock())
            append_event(tx, session_id=SYSTEM_SESSION_ID, event=PriceSet(
                provider=provider, model=model, revision=row.revision, effective_date=effective_date.isoformat(),
                currency=price.currency.code,
            ))
            return row

        return self._db.write(work)

    def uses_of_task(self, task_id: TaskId) -> list[rows.PriceUse]:
        """Which price revision priced which of ``task_id``'s model calls (the calls without a price last)."""
        return self._db.read(lambda view: rows.price_uses_of_task(view, task_id))

    def _snapshot(self, provider: str, model: str) -> PriceSnapshot | None:
        return next((s for s in self._shipped if s.provider.value == provider and s.matches(model)), None)

    def _user_revision(self, view: ReadView, *, provider: str, model: str,
                       snapshot: PriceSnapshot | None) -> rows.PriceRevisionRow | None:
        names = [model] if snapshot is None or snapshot.model == model else [model, snapshot.model]
        for name in names:
            user = rows.latest_price_revision(view, provider=provider, model=name, source=PriceSource.USER)
            if user is not None:
                return user
        return None

    def price_of(self, *, provider: str, model: str) -> Price | None:
        """The rates a call to ``model`` would be priced with now (the user's newest revision, else the
        shipped default), or None when codeflux knows none. Read only: nothing is recorded (a forecast)."""
        snapshot = self._snapshot(provider, model)
        user = self._db.read(lambda view: self._user_revision(view, provider=provider, model=model,
                                                              snapshot=snapshot))
        if user is not None:
            return user.price
        return None if snapshot is None else snapshot.price

    def price_in_force(self, tx: Transaction, *, provider: str, model: str) -> rows.PriceRevisionRow | None:
        """The rates a call to ``model`` is priced with, recording the shipped default on first use.

        Remembered per model while no price revision is added (one indexed read of the newest revision's id per
        call instead of the lookups): a price set meanwhile, by any process, applies to the next call as the store
        says. What a transaction found is remembered only once it committed."""
        newest = rows.newest_price_snapshot_id(tx)
        key = (provider, model)
        known = self._in_force.get(key)
        if known is not None and known[0] == newest:
            return known[1]
        found = self._look_up_in_force(tx, provider=provider, model=model)
        marker = newest if found is None else max(newest, found.snapshot_id)
        tx.after_commit(lambda: self._in_force.__setitem__(key, (marker, found)))
        return found

    def _look_up_in_force(self, tx: Transaction, *, provider: str, model: str) -> rows.PriceRevisionRow | None:
        snapshot = self._snapshot(provider, model)
        user = self._user_revision(tx, provider=provider, model=model, snapshot=snapshot)
        if user is not None:
            return user
        if snapshot is None:
            return None
        shipped = rows.latest_price_revision(tx, provider=provider, model=snapshot.model, source=PriceSource.SHIPPED)
        if shipped is not None and (shipped.price, shipped.effective_date) == (snapshot.price, snapshot.effective_date):
            return shipped
        return rows.insert_price_revision(tx, provider=provider, model=snapshot.model, source=PriceSource.SHIPPED,
                                          source_detail=snapshot.source, price=snapshot.price,
                                          effective_date=snapshot.effective_date, at_us=self._clock())

def _listing(row: rows.PriceRevisionRow, *, aliases: tuple[str, ...]) -> PriceListing:
    return PriceListing(provider=row.provider, model=row.model, aliases=aliases, price=row.price,
                        effective_date=row.effective_date, source=row.source, source_detail=row.source_detail,
                        revision=row.revision)


def merge_price_listings(
    shipped: Sequence[PriceSnapshot], users: Sequence[rows.PriceRevisionRow], *, provider: str | None = None
) -> list[PriceListing]:
    """The shipped defaults with each model's newest user revision in place of its default, plus the
    models only the user priced; by provider and model."""
    by_key = {(row.provider, row.model): row for row in users if provider is None or row.provider == provider}
    listed: list[PriceListing] = []
    for snapshot in shipped:
        if provider is not None and snapshot.provider.value != provider:
            continue
        user = by_key.pop((snapshot.provider.value, snapshot.model), None)
        listed.append(_listing(user, aliases=snapshot.aliases) if user else PriceListing(
            provider=snapshot.provider.value, model=snapshot.model, aliases=snapshot.aliases,
            price=snapshot.price, effective_date=snapshot.effective_date, source=PriceSource.SHIPPED,
            source_detail=snapshot.source, revision=None,
        ))  # fmt: skip
    listed += [_listing(row, aliases=()) for row in by_key.values()]
    return sorted(listed, key=lambda item: (item.provider, item.model))
