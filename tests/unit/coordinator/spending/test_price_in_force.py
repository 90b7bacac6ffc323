"""The price in force a call is priced with: remembered between calls while no price revision is added, and never
stale — a price set meanwhile (by this or another process) applies to the next call as the store says, and what a
rolled-back transaction found is never remembered."""

from __future__ import annotations

import datetime as dt
from unittest.mock import patch

import pytest

from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.domain.money import USD
from codeflux.domain.pricing import Price
from codeflux.domain.providers import ProviderName
from codeflux.providers.prices import PriceSnapshot
from codeflux.store import prices as price_rows
from codeflux.store.database import Database, Transaction

DAY = dt.date(2026, 1, 1)
SHIPPED = PriceSnapshot(
    provider=ProviderName.ANTHROPIC, model="claude-bench-1", aliases=("claude-bench",), effective_date=DAY,
    price=Price.from_per_million_tokens(currency=USD, input_per_million="3", output_per_million="15"),
    source="test snapshot",
)


def per_million(input_: str) -> Price:
    return Price.from_per_million_tokens(currency=USD, input_per_million=input_, output_per_million="2")


def in_force(db: Database, catalog: PriceCatalog, model: str) -> price_rows.PriceRevisionRow:
    row = db.write(lambda tx: catalog.price_in_force(tx, provider="anthropic", model=model))
    assert row is not None
    return row


def test_the_price_in_force_is_remembered_while_no_revision_is_added(db: Database) -> None:
    catalog = PriceCatalog(db, shipped=[SHIPPED])
    first = in_force(db, catalog, "claude-bench")
    with patch.object(price_rows, "latest_price_revision", side_effect=AssertionError("looked up again")):
        assert in_force(db, catalog, "claude-bench") == first
    assert (first.model, first.price, first.source.value) == ("claude-bench-1", SHIPPED.price, "shipped")


def test_a_price_set_by_another_process_applies_to_the_next_call(db: Database) -> None:
    catalog = PriceCatalog(db, shipped=[SHIPPED])
    assert in_force(db, catalog, "claude-bench").price == SHIPPED.price
    with Database.open(db.path) as other:  # another connection to the same file: another process's writes
        PriceCatalog(other).set_user_price(provider="anthropic", model="claude-bench-1", price=per_million("7"),
                                           effective_date=DAY)
    assert in_force(db, catalog, "claude-bench").price == per_million("7")
    catalog_here = PriceCatalog(db)
    catalog_here.set_user_price(provider="anthropic", model="claude-bench-1", price=per_million("9"),
                                effective_date=DAY)
    assert in_force(db, catalog, "claude-bench").price == per_million("9")


def test_what_a_rolled_back_transaction_found_is_not_remembered(db: Database) -> None:
    catalog = PriceCatalog(db, shipped=[SHIPPED])

    def found_then_failed(tx: Transaction) -> None:
        catalog.price_in_force(tx, provider="anthropic", model="claude-bench")  # records the shipped revision …
        raise RuntimeError("… and the transaction rolls back")

    with pytest.raises(RuntimeError):
        db.write(found_then_failed)
    # the rolled-back row's id is taken again by another model's revision
    other = PriceCatalog(db).set_user_price(provider="openai", model="gpt-bench", price=per_million("5"),
                                            effective_date=DAY)
    row = in_force(db, catalog, "claude-bench")
    assert (row.model, row.price) == ("claude-bench-1", SHIPPED.price)
    assert row.snapshot_id != other.snapshot_id
    stored = db.read(lambda view: price_rows.latest_price_revision(view, provider="anthropic", model="claude-bench-1"))
    assert stored == row
