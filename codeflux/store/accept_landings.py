"""SQL of accept landings: the intent recorded before an accept touches the checkout, and its end
(see ``migrations/000010_accept_landings.sql``). Both tables are facts: no UPDATE, no DELETE."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from codeflux.domain.ids import TaskId
from codeflux.store.database import ReadView, Row, Transaction
from codeflux.store.decoding import decode_choice

__all__ = [
    "LandingEndedBy",
    "LandingOutcome",
    "LandingRow",
    "ResolvedLanding",
    "insert_landing",
    "insert_landing_end",
    "landing_of_task",
    "resolved_landings",
    "unfinished_landings",
]

_COLUMNS = ("id, task_id, diff_identity, mode, work_tree, git_dir, common_dir, branch_ref, previous_head,"
            " previous_tree, landed_head, landed_tree, task_commit, task_branch_ref, paths_json, locks_json, token,"
            " started_at_us")
_SELECT = ", ".join(f"l.{c.strip()}" for c in _COLUMNS.split(","))


class LandingOutcome(StrEnum):
    LANDED = "landed"
    ROLLED_BACK = "rolled-back"


class LandingEndedBy(StrEnum):
    ACCEPT = "accept"
    RETRY = "retry"
    RECOVERY = "recovery"


@dataclass(frozen=True, slots=True, kw_only=True)
class LandingRow:
    """One accept landing as recorded before it started (``paths`` and ``locks`` decoded from JSON)."""

    landing_id: int
    task_id: TaskId
    diff_identity: str
    mode: str
    work_tree: str
    git_dir: str
    common_dir: str
    branch_ref: str
    previous_head: str
    previous_tree: str
    landed_head: str
    landed_tree: str
    task_commit: str
    task_branch_ref: str | None
    paths: tuple[dict[str, object], ...]
    locks: tuple[str, ...]
    token: str
    started_at_us: int


def _row(row: Row) -> LandingRow:
    return LandingRow(
        landing_id=int(row[0]), task_id=TaskId.parse(str(row[1])), diff_identity=str(row[2]), mode=str(row[3]),
        work_tree=str(row[4]), git_dir=str(row[5]), common_dir=str(row[6]), branch_ref=str(row[7]),
        previous_head=str(row[8]), previous_tree=str(row[9]), landed_head=str(row[10]), landed_tree=str(row[11]),
        task_commit=str(row[12]), task_branch_ref=None if row[13] is None else str(row[13]),
        paths=tuple(json.loads(str(row[14]))), locks=tuple(str(p) for p in json.loads(str(row[15]))),
        token=str(row[16]), started_at_us=int(row[17]))


def insert_landing(
    tx: Transaction, *, task_id: TaskId, diff_identity: str, mode: str, work_tree: str, git_dir: str,
    common_dir: str, branch_ref: str, previous_head: str, previous_tree: str, landed_head: str, landed_tree: str,
    task_commit: str, task_branch_ref: str | None, paths_json: str, locks: tuple[str, ...], token: str, at_us: int,
) -> LandingRow:  # fmt: skip
    """Record the intent of one landing (before anything in the checkout is touched)."""
    rows = tx.execute(
        f"INSERT INTO accept_landings ({_COLUMNS}) VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"  # noqa: S608
        f" RETURNING {_COLUMNS}",
        (task_id.value, diff_identity, mode, work_tree, git_dir, common_dir, branch_ref, previous_head, previous_tree,
         landed_head, landed_tree, task_commit, task_branch_ref, paths_json, json.dumps(list(locks)), token, at_us))
    return _row(rows[0])


def insert_landing_end(tx: Transaction, *, landing_id: int, outcome: LandingOutcome, ended_by: LandingEndedBy,
                       detail: str, at_us: int) -> bool:
    """Record how landing ``landing_id`` ended; False when an end was already recorded (nothing written)."""
    rows = tx.execute(
        "INSERT INTO accept_landing_ends (landing_id, outcome, ended_by, detail, ended_at_us) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (landing_id) DO NOTHING RETURNING landing_id",
        (landing_id, LandingOutcome(outcome).value, LandingEndedBy(ended_by).value, detail[:2048], at_us))
    return bool(rows)


def unfinished_landings(view: ReadView) -> list[LandingRow]:
    """Every landing without an end, oldest first."""
    rows = view.query_all(
        f"SELECT {_SELECT} FROM accept_landings l LEFT JOIN accept_landing_ends e ON e.landing_id = l.id"  # noqa: S608
        " WHERE e.landing_id IS NULL ORDER BY l.id")
    return [_row(row) for row in rows]


def landing_of_task(view: ReadView, task_id: TaskId, *, unfinished_only: bool) -> LandingRow | None:
    """The task's newest landing (only one without an end when ``unfinished_only``), or None."""
    condition = " AND e.landing_id IS NULL" if unfinished_only else ""
    row = view.query_one(
        f"SELECT {_SELECT} FROM accept_landings l LEFT JOIN accept_landing_ends e ON e.landing_id = l.id"  # noqa: S608
        f" WHERE l.task_id = ?{condition} ORDER BY l.id DESC LIMIT 1", (task_id.value,))
    return None if row is None else _row(row)


def landing_outcome(view: ReadView, landing_id: int) -> LandingOutcome | None:
    row = view.query_one("SELECT outcome FROM accept_landing_ends WHERE landing_id = ?", (landing_id,))
    return None if row is None else decode_choice(LandingOutcome, row[0], kind="landing outcome")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedLanding:
    """A landing that did not end in its own accept, resolved afterwards by a retry or by startup recovery:
    ``outcome`` ``landed`` (finished: the branch had moved) or ``rolled-back``; ``detail`` says why it stopped."""

    landing: LandingRow
    outcome: LandingOutcome
    ended_by: LandingEndedBy
    detail: str
    ended_at_us: int


_RESOLVED = " FROM accept_landings l JOIN accept_landing_ends e ON e.landing_id = l.id WHERE e.ended_by <> 'accept'"


def resolved_landings(view: ReadView, *, task_id: TaskId | None, limit: int) -> tuple[list[ResolvedLanding], int]:
    """The newest ``limit`` landings a retry or startup recovery resolved (only ``task_id``'s when given), most
    recent first, and how many such landings are recorded in all."""
    condition, params = ("", ()) if task_id is None else (" AND l.task_id = ?", (task_id.value,))
    total = view.query_one(f"SELECT count(*){_RESOLVED}{condition}", params)
    rows = view.query_all(
        f"SELECT {_SELECT}, e.outcome, e.ended_by, e.detail, e.ended_at_us{_RESOLVED}{condition}"
        " ORDER BY e.ended_at_us DESC, l.id DESC LIMIT ?", (*params, max(0, limit)))
    width = len(_COLUMNS.split(","))
    return [ResolvedLanding(
        landing=_row(row[:width]), outcome=decode_choice(LandingOutcome, row[width], kind="landing outcome"),
        ended_by=decode_choice(LandingEndedBy, row[width + 1], kind="landing ended by"), detail=str(row[width + 2]),
        ended_at_us=int(row[width + 3])) for row in rows], 0 if total is None else int(total[0])
