"""Repository operation identity: the task's canonical document with task_id replaced by the repository's root
commits — a distinct identity kind that never equals a task identity, and that ignores only the task."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.operations import Operation, OperationIdentity, canonical_operation_json, derive_operation_identity
from codeflux.domain.repository_approvals import (
    RepositoryOperationIdentity,
    RepositoryRoots,
    canonical_repository_operation_json,
    derive_repository_operation_identity,
)
from tests.unit.domain.test_operations import _OPERATIONS, OTHER_TASK, TASK, operation

ROOT_A = "1" * 40
ROOT_B = "2" * 40
ROOTS = RepositoryRoots.of([ROOT_A])
_ROOTS = st.lists(st.sampled_from([ROOT_A, ROOT_B, "3" * 64]), min_size=1, max_size=2).map(RepositoryRoots.of)


def test_the_repository_document_is_the_task_document_with_task_id_replaced_by_the_roots() -> None:
    task_document = json.loads(canonical_operation_json(operation()))
    repository_document = json.loads(canonical_repository_operation_json(operation(), ROOTS))
    del task_document["task_id"]
    assert repository_document.pop("repository_roots") == [ROOT_A]
    assert repository_document == task_document


def test_the_repository_identity_is_the_sha256_of_that_document_written_with_an_rop_prefix() -> None:
    identity = derive_repository_operation_identity(operation(), ROOTS)
    text = canonical_repository_operation_json(operation(), ROOTS)
    assert identity.digest == hashlib.sha256(text.encode("ascii")).hexdigest()
    assert str(identity).startswith("rop_")
    assert RepositoryOperationIdentity.parse(str(identity)) == identity
    with pytest.raises(InvalidValueError):
        RepositoryOperationIdentity.parse(f"op_{identity.digest}")


def test_the_same_operation_in_two_tasks_of_one_repository_has_one_repository_identity() -> None:
    first = derive_repository_operation_identity(operation(task_id=TASK), ROOTS)
    assert first == derive_repository_operation_identity(operation(task_id=OTHER_TASK), ROOTS)
    task_identities = {derive_operation_identity(operation(task_id=task)) for task in (TASK, OTHER_TASK)}
    assert len(task_identities) == 2


def test_another_repository_argument_or_program_is_another_repository_identity() -> None:
    base = derive_repository_operation_identity(operation(), ROOTS)
    assert base != derive_repository_operation_identity(operation(), RepositoryRoots.of([ROOT_B]))
    assert base != derive_repository_operation_identity(operation(), RepositoryRoots.of([ROOT_A, ROOT_B]))
    assert base != derive_repository_operation_identity(
        operation(arguments=(("argv", ("curl", "https://example.org")),)), ROOTS)
    assert base != derive_repository_operation_identity(operation(tool="grep", executable=None), ROOTS)


def test_roots_are_sorted_distinct_commits_and_never_empty() -> None:
    assert RepositoryRoots.of([ROOT_B, ROOT_A, ROOT_B]).commits == (ROOT_A, ROOT_B)
    for bad in ([], ["abc"], ["G" * 40]):
        with pytest.raises(InvalidValueError):
            RepositoryRoots.of(bad)


@settings(database=None, max_examples=400, deadline=None)
@given(task_operation=_OPERATIONS, repository_operation=_OPERATIONS, roots=_ROOTS)
def test_no_task_identity_ever_equals_a_repository_identity(
    task_operation: Operation, repository_operation: Operation, roots: RepositoryRoots
) -> None:
    task_text = canonical_operation_json(task_operation)
    repository_text = canonical_repository_operation_json(repository_operation, roots)
    assert task_text != repository_text
    assert derive_operation_identity(task_operation).digest != \
        derive_repository_operation_identity(repository_operation, roots).digest
    assert "task_id" not in json.loads(repository_text)
    assert "repository_roots" not in json.loads(task_text)


@settings(database=None, max_examples=300, deadline=None)
@given(first=_OPERATIONS, second=_OPERATIONS, roots=_ROOTS, other_roots=_ROOTS)
def test_repository_identities_are_equal_exactly_when_all_but_the_task_is_equal(
    first: Operation, second: Operation, roots: RepositoryRoots, other_roots: RepositoryRoots
) -> None:
    moved = Operation(task_id=TaskId.parse(str(OTHER_TASK)), tool=second.tool, arguments=second.arguments,
                      cwd=second.cwd, effects=second.effects, executable=second.executable, env=second.env,
                      stdin_sha256=second.stdin_sha256)
    comparable = Operation(task_id=OTHER_TASK, tool=first.tool, arguments=first.arguments, cwd=first.cwd,
                           effects=first.effects, executable=first.executable, env=first.env,
                           stdin_sha256=first.stdin_sha256)
    same = derive_repository_operation_identity(first, roots) == derive_repository_operation_identity(
        second, other_roots)
    assert same == (comparable == moved and roots == other_roots)
    assert isinstance(derive_operation_identity(first), OperationIdentity)
