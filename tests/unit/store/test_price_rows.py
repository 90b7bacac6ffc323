"""Price revisions leave the store with their source as :class:`PriceSource`; an unknown source is refused."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction

import pytest

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.money import USD
from codeflux.domain.pricing import Price, PriceSource
from codeflux.store import prices as rows
from codeflux.store.database import Database

PRICE = Price(currency=USD, input_minor_per_token=Fraction(3, 10_000), output_minor_per_token=Fraction(15, 10_000))


def test_a_revision_reads_back_with_its_source_and_is_found_by_it(db: Database) -> None:
    recorded = db.write(lambda tx: rows.insert_price_revision(
        tx, provider="anthropic", model="m", source=PriceSource.USER, source_detail="codeflux prices set",
        price=PRICE, effective_date=dt.date(2026, 1, 2), at_us=1))

    by_source = db.read(lambda view: rows.latest_price_revision(view, provider="anthropic", model="m",
                                                                source=PriceSource.USER))
    shipped = db.read(lambda view: rows.latest_price_revisions(view, source=PriceSource.SHIPPED))

    assert recorded.source is PriceSource.USER and by_source == recorded and recorded.price == PRICE
    assert shipped == []


def test_an_unknown_price_source_is_refused(db: Database) -> None:
    recorded = db.write(lambda tx: rows.insert_price_revision(
        tx, provider="anthropic", model="m", source=PriceSource.SHIPPED, source_detail="shipped table",
        price=PRICE, effective_date=dt.date(2026, 1, 2), at_us=1))
    raw = db.read(lambda view: view.query_one(f"SELECT {rows._PRICE} FROM price_snapshots WHERE id = ?",  # noqa: S608
                                              (recorded.snapshot_id,)))
    assert raw is not None

    with pytest.raises(StoredValueUnknownError, match="price source"):
        rows._price_row((*raw[:4], "rumour", *raw[5:]))
