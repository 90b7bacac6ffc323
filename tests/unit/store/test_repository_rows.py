"""A dirty-tree acknowledgement leaves the store with its changes decoded (each status a
:class:`ChangeStatus`); an unknown status or a malformed list is refused."""

from __future__ import annotations

import pytest

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.domain.ids import RepositoryId, TaskId
from codeflux.domain.working_tree import ChangeStatus
from codeflux.store import repositories as rows

TASK = TaskId.from_entropy(bytes(16))
REPOSITORY = RepositoryId.from_entropy(bytes(16))


def _stored(changes_json: str) -> tuple[object, ...]:
    # id, task_id, repository_id, dirty_hash, changes_json, acknowledged_by, acknowledged_at_us
    return (1, TASK.value, REPOSITORY.value, "0" * 64, changes_json, "user", 5)


def test_the_acknowledged_changes_decode_to_their_statuses() -> None:
    row = rows._acknowledgement(_stored('[["a.py","modified","' + "1" * 64 + '"],["gone.txt","deleted",null]]'))
    assert [(c.path, c.status, c.content_sha256) for c in row.changes] == [
        ("a.py", ChangeStatus.MODIFIED, "1" * 64), ("gone.txt", ChangeStatus.DELETED, None)]


@pytest.mark.parametrize("changes_json", ['[["a.py","renamed",null]]', '{"a.py":"modified"}', "[[", '[["a.py"]]'])
def test_an_unknown_status_or_a_malformed_list_is_refused(changes_json: str) -> None:
    with pytest.raises(StoredValueUnknownError):
        rows._acknowledgement(_stored(changes_json))
