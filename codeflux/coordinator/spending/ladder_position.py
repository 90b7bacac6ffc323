"""Where a task stands on the model ladder when its run goes on (issue 14 item 7).

A pause, ``codeflux task resume`` or a restart starts a new run of the task; it goes on from the highest rung
the task's model calls already used (recorded with every model request), never back at the bottom. The
attempt count needs nothing here: attempts are rows of their own.
"""

from __future__ import annotations

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import DEFAULT_LADDER, DEFAULT_STALL_THRESHOLD, Ladder, LadderPosition, Rung
from codeflux.store.database import Database
from codeflux.store.model_requests import rungs_used_by_task

__all__ = ["ladder_position_of"]


def ladder_position_of(db: Database, task_id: TaskId, ladder: Ladder = DEFAULT_LADDER, *,
                       stall_threshold: int = DEFAULT_STALL_THRESHOLD) -> LadderPosition:
    """The position a new run of ``task_id`` starts from on ``ladder`` (a gateway's: the configured one)."""
    used = []
    for text in db.read(lambda view: rungs_used_by_task(view, task_id)):
        try:
            used.append(Rung.parse(text))
        except InvalidValueError:
            continue  # a rung this codeflux does not know cannot be resumed on
    return LadderPosition.resumed(used, ladder, stall_threshold=stall_threshold)
