"""SQL of price revisions and of the approvals a model call needs (endpoint, ladder rung).

Rates are stored as INTEGER numerator/denominator pairs of minor units per token and read back as exact
:class:`~fractions.Fraction` values; a NULL pair is "no rate" (unknown). Revisions of one model count up
from 1 and are never changed. Every function works inside the caller's transaction or read view.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.money import MAX_MINOR_UNITS, Currency
from codeflux.domain.pricing import Price, PriceComponent, PriceSource
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice

__all__ = [
    "PriceRevisionRow",
    "PriceUse",
    "insert_endpoint_approval",
    "insert_price_revision",
    "insert_rung_approval",
    "is_endpoint_approved",
    "is_rung_approved",
    "latest_price_revision",
    "latest_price_revisions",
    "newest_price_snapshot_id",
    "price_uses_of_task",
]

_COMPONENTS: Final = (
    (PriceComponent.INPUT, "input"),
    (PriceComponent.OUTPUT, "output"),
    (PriceComponent.CACHE_READ, "cache_read"),
    (PriceComponent.CACHE_WRITE, "cache_write"),
    (PriceComponent.REASONING, "reasoning"),
    (PriceComponent.CACHE_WRITE_1H, "cache_write_1h"),  # 000020: after the others, as the columns were added
)
_RATE_COLUMNS: Final = ", ".join(f"{name}_num, {name}_den" for _, name in _COMPONENTS)
_PRICE = (f"id, provider, model, revision, source, source_detail, currency, effective_date, {_RATE_COLUMNS},"
          " recorded_at_us")


def _int(value: object) -> int:
    return int(str(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceRevisionRow:
    """One stored revision of a model's rates (``source`` is ``shipped`` or ``user``)."""

    snapshot_id: int
    provider: str
    model: str
    revision: int
    source: PriceSource
    source_detail: str
    price: Price
    effective_date: dt.date
    recorded_at_us: int


def _rate_pair(rate: Fraction | None) -> tuple[int | None, int | None]:
    if rate is None:
        return None, None
    if rate.numerator > MAX_MINOR_UNITS or rate.denominator > MAX_MINOR_UNITS:
        raise InvalidValueError(kind="price", reason="a rate is too large or too fine to store exactly")
    return rate.numerator, rate.denominator


def _price_row(row: Row) -> PriceRevisionRow:
    rates: dict[str, Fraction | None] = {}
    for index, (component, _) in enumerate(_COMPONENTS):
        numerator, denominator = row[8 + 2 * index], row[9 + 2 * index]
        rates[component.value] = None if numerator is None else Fraction(_int(numerator), _int(denominator))
    price = Price(
        currency=Currency.parse(str(row[6])),
        input_minor_per_token=rates[PriceComponent.INPUT.value],
        output_minor_per_token=rates[PriceComponent.OUTPUT.value],
        cache_read_minor_per_token=rates[PriceComponent.CACHE_READ.value],
        cache_write_minor_per_token=rates[PriceComponent.CACHE_WRITE.value],
        reasoning_minor_per_token=rates[PriceComponent.REASONING.value],
        cache_write_1h_minor_per_token=rates[PriceComponent.CACHE_WRITE_1H.value],
    )
    return PriceRevisionRow(
        snapshot_id=_int(row[0]), provider=str(row[1]), model=str(row[2]), revision=_int(row[3]),
        source=decode_choice(PriceSource, row[4], kind="price source"), source_detail=str(row[5]), price=price,
        effective_date=dt.date.fromisoformat(str(row[7])), recorded_at_us=_int(row[8 + 2 * len(_COMPONENTS)]),
    )


def insert_price_revision(
    tx: Transaction,
    *,
    provider: str,
    model: str,
    source: PriceSource,
    source_detail: str,
    price: Price,
    effective_date: dt.date,
    at_us: int,
) -> PriceRevisionRow:
    """Record the next revision of ``model``'s rates and return it."""
    pairs = [value for component, _ in _COMPONENTS for value in _rate_pair(price.rate(component))]
    placeholders = ", ".join("?" for _ in range(9 + 2 * len(_COMPONENTS)))
    rows = tx.execute(
        f"INSERT INTO price_snapshots ({_PRICE}) VALUES ({placeholders})"  # noqa: S608
        " RETURNING " + _PRICE,
        (None, provider, model, _next_price_revision(tx, provider, model), source.value, source_detail,
         price.currency.code, effective_date.isoformat(), *pairs, at_us),
    )
    return _price_row(rows[0])


def _next_price_revision(view: ReadView, provider: str, model: str) -> int:
    row = view.query_one(
        "SELECT coalesce(max(revision), 0) + 1 FROM price_snapshots WHERE provider = ? AND model = ?",
        (provider, model),
    )
    return 1 if row is None else _int(row[0])


def newest_price_snapshot_id(view: ReadView) -> int:
    """The id of the newest price revision recorded (0 for none). Revisions are only ever added (never changed or
    deleted), so while this is unchanged so is every price in force."""
    row = view.query_one("SELECT coalesce(max(id), 0) FROM price_snapshots")
    return 0 if row is None else _int(row[0])


def latest_price_revision(
    view: ReadView, *, provider: str, model: str, source: PriceSource | None = None
) -> PriceRevisionRow | None:
    """The newest revision of ``model`` (of ``source`` only, when given), or None."""
    row = view.query_one(
        f"SELECT {_PRICE} FROM price_snapshots WHERE provider = ? AND model = ?"  # noqa: S608
        " AND (? IS NULL OR source = ?) ORDER BY revision DESC LIMIT 1",
        (provider, model, None if source is None else source.value, None if source is None else source.value),
    )
    return None if row is None else _price_row(row)


def latest_price_revisions(
    view: ReadView, *, source: PriceSource, provider: str | None = None
) -> list[PriceRevisionRow]:
    """The newest ``source`` revision of every model (of ``provider``, when given), by provider and model."""
    rows = view.query_all(
        f"SELECT {_PRICE} FROM price_snapshots p WHERE source = ? AND (? IS NULL OR provider = ?)"  # noqa: S608
        " AND revision = (SELECT max(revision) FROM price_snapshots q WHERE q.provider = p.provider"
        " AND q.model = p.model AND q.source = p.source) ORDER BY provider, model",
        (source.value, provider, provider),
    )
    return [_price_row(row) for row in rows]


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceUse:
    """The price revision a task's model calls were priced with (``revision`` None: calls that had no price), and
    which calls (``request_ids``, in the order they were planned)."""

    revision: PriceRevisionRow | None
    request_ids: tuple[str, ...]


def price_uses_of_task(view: ReadView, task_id: TaskId) -> list[PriceUse]:
    """Each price revision ``task_id``'s model requests point at (``model_requests.price_snapshot_id``), with its
    calls, in the order of each revision's first call; the calls priced by none last."""
    rows = view.query_all(
        "SELECT id, price_snapshot_id FROM model_requests WHERE task_id = ? ORDER BY planned_at_us, id",
        (task_id.value,),
    )
    calls: dict[int | None, list[str]] = {}
    for row in rows:
        calls.setdefault(None if row[1] is None else _int(row[1]), []).append(str(row[0]))
    found = view.query_all(
        f"SELECT {_PRICE} FROM price_snapshots WHERE id IN"  # noqa: S608
        " (SELECT price_snapshot_id FROM model_requests WHERE task_id = ?)", (task_id.value,))
    revisions = {item.snapshot_id: item for item in map(_price_row, found)}
    ids = [snapshot_id for snapshot_id in calls if snapshot_id is not None]
    uses = [PriceUse(revision=revisions[snapshot_id], request_ids=tuple(calls[snapshot_id])) for snapshot_id in ids]
    if None in calls:
        uses.append(PriceUse(revision=None, request_ids=tuple(calls[None])))
    return uses


# ─── approvals ───────────────────────────────────────────────────────────────────────────────────


def insert_endpoint_approval(tx: Transaction, *, provider: str, base_url: str, approved_by: str, at_us: int) -> bool:
    """Record that ``base_url`` (normalized) is approved for ``provider``; False if it already was."""
    rows = tx.execute(
        "INSERT INTO endpoint_approvals (provider, base_url, approved_by, approved_at_us) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (provider, base_url) DO NOTHING RETURNING id",
        (provider, base_url, approved_by, at_us),
    )
    return bool(rows)


def is_endpoint_approved(view: ReadView, *, provider: str, base_url: str) -> bool:
    row = view.query_one(
        "SELECT 1 FROM endpoint_approvals WHERE provider = ? AND base_url = ?", (provider, base_url)
    )
    return row is not None


def insert_rung_approval(tx: Transaction, *, task_id: TaskId, rung: str, approved_by: str, at_us: int) -> bool:
    """Record that ``rung`` may be used by ``task_id``; False if it already was."""
    rows = tx.execute(
        "INSERT INTO ladder_rung_approvals (task_id, rung, approved_by, approved_at_us) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (task_id, rung) DO NOTHING RETURNING rung",
        (task_id.value, rung, approved_by, at_us),
    )
    return bool(rows)


def is_rung_approved(view: ReadView, *, task_id: TaskId, rung: str) -> bool:
    row = view.query_one(
        "SELECT 1 FROM ladder_rung_approvals WHERE task_id = ? AND rung = ?", (task_id.value, rung)
    )
    return row is not None
