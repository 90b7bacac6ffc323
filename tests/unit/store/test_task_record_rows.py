"""Task rows, transitions and kept patches leave the store with states, actors and kinds as enums; an
unknown stored value is refused rather than coerced."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import Actor, PatchKind, TaskState
from codeflux.store import task_records as records
from codeflux.store import tasks as task_rows

TASK = TaskId.from_entropy(bytes(16))
# id, task_id, task_revision, from_state, to_state, reason, actor, event_session_id, event_sequence, at_us
TRANSITION = (1, TASK.value, 2, "ready", "running", "started", "headless-policy", "ses_x", 4, 9)
# id, task_id, kind, diff_identity, base_commit, head_commit, patch, patch_sha256, reason, recorded_at_us
PATCH = (1, TASK.value, "rejected", "0" * 64, "a" * 40, "b" * 40, b"diff", "1" * 64, "not this", 9)
# id, session_id, repository_root, worktree_path, base_revision, state, revision, created_at_us, updated_at_us
TASK_ROW = (TASK.value, "ses_x", "/r", "/w", None, "paused", 3, 1, 2)


def test_transitions_patches_and_tasks_decode_to_their_enums() -> None:
    transition = records._transition(TRANSITION)
    assert transition.from_state is TaskState.READY and transition.to_state is TaskState.RUNNING
    assert transition.actor is Actor.HEADLESS_POLICY
    assert records._patch(PATCH).kind is PatchKind.REJECTED
    assert task_rows._row(TASK_ROW).state is TaskState.PAUSED


@pytest.mark.parametrize(("decode", "stored", "index", "kind"), [
    (records._transition, TRANSITION, 3, "task state"),
    (records._transition, TRANSITION, 6, "task actor"),
    (records._patch, PATCH, 2, "task patch kind"),
    (task_rows._row, TASK_ROW, 5, "task state"),
])  # fmt: skip
def test_an_unknown_state_actor_or_patch_kind_is_refused(
    decode: object, stored: tuple[object, ...], index: int, kind: str
) -> None:
    assert callable(decode)
    with pytest.raises(StoredValueUnknownError) as refused:
        decode((*stored[:index], "unheard-of", *stored[index + 1:]))
    assert refused.value.kind == kind
