"""Settings: one JSON value per key in the ``settings`` table (000001), changed by compare-and-set.

The caller names the revision it read (``None`` for "there is no value yet"); a write from a stale read is
refused with :class:`StaleRevisionError`. The value is small JSON the caller validated; keys come from a
closed list in the code that owns each setting, never from input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from codeflux.domain.errors import StaleRevisionError
from codeflux.store.database import ReadView, Transaction, now_us
from codeflux.store.revisions import compare_and_set_revision

__all__ = ["SettingRow", "put_setting", "read_setting"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SettingRow:
    key: str
    value: Mapping[str, object]
    revision: int
    updated_at_us: int


def read_setting(view: ReadView, key: str) -> SettingRow | None:
    row = view.query_one("SELECT key, value_json, revision, updated_at_us FROM settings WHERE key = ?", (key,))
    if row is None:
        return None
    return SettingRow(key=str(row[0]), value=json.loads(str(row[1])), revision=int(row[2]),
                      updated_at_us=int(row[3]))


def put_setting(tx: Transaction, key: str, value: Mapping[str, object], *, expected_revision: int | None) -> int:
    """Write ``value`` under ``key`` if its revision is still ``expected_revision``; returns the new revision."""
    body = json.dumps(dict(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if expected_revision is None:
        at = now_us()
        rows = tx.execute(
            "INSERT INTO settings (key, value_json, revision, created_at_us, updated_at_us) VALUES (?, ?, 0, ?, ?)"
            " ON CONFLICT (key) DO NOTHING RETURNING revision",
            (key, body, at, at),
        )
        if not rows:
            current = read_setting(tx, key)
            raise StaleRevisionError(kind="setting", entity_id=key, expected=0,
                                     actual=None if current is None else current.revision)
        return 0
    revision = compare_and_set_revision(tx, table="settings", key=key, expected=expected_revision)
    tx.execute("UPDATE settings SET value_json = ? WHERE key = ?", (body, key))
    return revision
