"""The task list at scale, through the method table the transports use: 1,001 tasks created by the task
service's own write path (``TaskService.create_task``, one transaction each, as ``CreateTask`` does) in a real
SQLite file; ``ListTasks`` pages through them newest first, every task exactly once, a task created between
two pages shifts nothing, and a search reaches any task (the 1,000th by its id or its words) in the store."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli.main import main
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.ids import TaskId
from codeflux.services.app import CoordinatorApp
from codeflux.services.methods import build_method_table
from codeflux.services.registry import CallContext, Code, MethodTable, UnaryMethod, status_of
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.store.task_records import list_task_records
from tests.fixtures.services import ScriptedDemoAccess
from tests.fixtures.tasks import a_repository, keys

TASKS = 1001
CTX = CallContext(transport="test", connection_id="connection-1")


@dataclass(frozen=True, slots=True, kw_only=True)
class Store:
    app: CoordinatorApp
    table: MethodTable
    tasks: TaskService
    created: tuple[str, ...]  # task ids in creation order


def open_tasks(root: Path, count: int) -> Iterator[Store]:
    data = DataLocation(directory=root / "data")
    db = open_store(data, create=True, migrate=True)
    app = CoordinatorApp(db=db, location=data, models=ScriptedDemoAccess(db), version="test")
    tasks = TaskService(db, worktrees_root=data.worktrees)
    snapshot = a_repository(root / "repo")
    created = tuple(tasks.create_task(snapshot, f"Requirement of task {n}: make item-{n} work",
                                      title=f"Task {n}", idempotency_key=keys()).task_id.value
                    for n in range(1, count + 1))
    try:
        yield Store(app=app, table=build_method_table(app), tasks=tasks, created=created)
    finally:
        app.runs.shutdown(timeout=60)
        db.close()


@pytest.fixture(scope="module")
def thousand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """1,001 tasks (read-only for the tests that share it)."""
    yield from open_tasks(tmp_path_factory.mktemp("thousand"), TASKS)


@pytest.fixture
def few(tmp_path: Path) -> Iterator[Store]:
    yield from open_tasks(tmp_path, 23)


def list_tasks(store: Store, request: pb.ListTasksRequest) -> pb.ListTasksReply:
    found = store.table.get("/codeflux.v1.TaskService/ListTasks")
    assert isinstance(found, UnaryMethod)
    reply = found.handler(CTX, request)
    assert isinstance(reply, pb.ListTasksReply)
    return reply


def walk(store: Store, *, limit: int, query: str = "") -> list[pb.TaskSummary]:
    """Every page, following ``next_before`` until ``has_more`` is false."""
    listed: list[pb.TaskSummary] = []
    before = ""
    while True:
        reply = list_tasks(store, pb.ListTasksRequest(limit=limit, before=before, query=query))
        assert len(reply.tasks) <= limit
        listed.extend(reply.tasks)
        if not reply.has_more:
            assert reply.next_before == ""
            return listed
        assert reply.next_before == reply.tasks[-1].task_id
        before = reply.next_before


def test_paging_lists_every_one_of_1001_tasks_exactly_once_newest_first(thousand: Store) -> None:
    listed = walk(thousand, limit=100)
    assert [t.task_id for t in listed] == list(reversed(thousand.created))
    assert listed[0].title == f"Task {TASKS}" and listed[-1].title == "Task 1"
    stamps = [t.created_at_us for t in listed]
    assert stamps == sorted(stamps, reverse=True) and stamps[-1] > 0


def test_the_first_page_is_the_newest_and_the_default_and_maximum_page_sizes_hold(thousand: Store) -> None:
    default = list_tasks(thousand, pb.ListTasksRequest())
    assert len(default.tasks) == 100 and default.has_more
    assert default.tasks[0].task_id == thousand.created[-1]
    # the 101st task and beyond: the old oldest-first query with a limit of 100 never showed them
    assert thousand.created[100] in {t.task_id for t in walk(thousand, limit=500)}
    largest = list_tasks(thousand, pb.ListTasksRequest(limit=100_000))
    assert len(largest.tasks) == 500 and largest.has_more
    last = list_tasks(thousand, pb.ListTasksRequest(limit=10, before=thousand.created[10]))
    assert [t.task_id for t in last.tasks] == list(reversed(thousand.created[:10]))
    assert not last.has_more and last.next_before == ""


def test_a_search_finds_the_1000th_task_by_its_id_or_its_words_in_the_whole_store(thousand: Store) -> None:
    thousandth = thousand.created[999]
    by_id = list_tasks(thousand, pb.ListTasksRequest(query=thousandth.upper()))
    assert [t.task_id for t in by_id.tasks] == [thousandth] and not by_id.has_more
    # words of the requirement (in any order, any case); every word must match
    by_words = list_tasks(thousand, pb.ListTasksRequest(query="ITEM-1000  requirement"))
    assert [t.title for t in by_words.tasks] == ["Task 1000"]
    assert list_tasks(thousand, pb.ListTasksRequest(query="item-1000 nothing-like-this")).tasks == []
    # a search pages like the list: "task 1" + "item-1" match tasks 1, 10-19, 100-199 and 1000-1001
    matched = walk(thousand, limit=7, query="item-1 Task")
    expected = [n for n in range(1, TASKS + 1) if str(n).startswith("1")]
    assert [t.title for t in matched] == [f"Task {n}" for n in reversed(expected)]


def test_a_task_created_between_two_pages_shifts_no_later_page(few: Store) -> None:
    first = list_tasks(few, pb.ListTasksRequest(limit=5))
    snapshot = a_repository(few.app.location.directory.parent / "another")
    newer = few.tasks.create_task(snapshot, "Created while the person pages", idempotency_key=keys())
    rest = walk_from(few, first.next_before, limit=5)
    listed = [t.task_id for t in (*first.tasks, *rest)]
    assert listed == list(reversed(few.created))  # no duplicate, nothing skipped
    assert newer.task_id.value not in listed
    # positive control: the new task heads the list read afresh
    assert list_tasks(few, pb.ListTasksRequest(limit=5)).tasks[0].task_id == newer.task_id.value


def walk_from(store: Store, before: str, *, limit: int) -> list[pb.TaskSummary]:
    listed: list[pb.TaskSummary] = []
    while before:
        reply = list_tasks(store, pb.ListTasksRequest(limit=limit, before=before))
        listed.extend(reply.tasks)
        before = reply.next_before
    return listed


def test_paging_from_an_unknown_or_malformed_task_or_with_an_oversized_search_is_refused(few: Store) -> None:
    def code_of(request: pb.ListTasksRequest) -> int:
        with pytest.raises(Exception) as raised:
            list_tasks(few, request)
        return status_of(raised.value).code

    assert code_of(pb.ListTasksRequest(before=TaskId.from_entropy(bytes(16)).value)) == Code.NOT_FOUND
    assert code_of(pb.ListTasksRequest(before="not-a-task")) == Code.INVALID_ARGUMENT
    assert code_of(pb.ListTasksRequest(query="x" * 501)) == Code.INVALID_ARGUMENT
    assert code_of(pb.ListTasksRequest(query=" ".join(f"w{n}" for n in range(13)))) == Code.INVALID_ARGUMENT
    # positive control: the same kinds of request within bounds are answered
    assert len(list_tasks(few, pb.ListTasksRequest(before=few.created[-1], query="x" * 500)).tasks) == 0
    assert len(list_tasks(few, pb.ListTasksRequest(before=few.created[-1])).tasks) == 22


def test_the_store_pages_one_repository_newest_first(few: Store) -> None:
    other = few.tasks.create_task(a_repository(few.app.location.directory.parent / "other"), "Elsewhere",
                                  idempotency_key=keys())
    first = few.app.db.read(lambda view: list_task_records(view, limit=1))[0]
    assert first.task_id == other.task_id and first.repository_id is not None
    mine = few.app.db.read(lambda view: list_task_records(view, limit=1, before=other.task_id))[0]
    assert mine.repository_id is not None and mine.repository_id != first.repository_id
    of_mine = few.app.db.read(lambda view: list_task_records(view, limit=100, repository_id=mine.repository_id))
    assert [r.task_id.value for r in of_mine] == list(reversed(few.created))
    of_other = few.app.db.read(lambda view: list_task_records(view, limit=100, repository_id=first.repository_id))
    assert [r.task_id for r in of_other] == [other.task_id]


def task_list(capsys: pytest.CaptureFixture[str], store: Store, *argv: str) -> tuple[int, list[str], list[str]]:
    """The exit code, the lines on stdout and the lines on stderr naming the next page or an empty list."""
    code = main(["task", "list", "--data-dir", str(store.app.location.directory), *argv])
    out, err = capsys.readouterr()
    assert code == 0 or not out, out
    notes = [line for line in err.splitlines() if line.startswith(("more: ", "no "))]
    return code, out.splitlines(), notes


def test_the_cli_pages_newest_first_says_how_to_see_more_and_lists_everything_with_all(
    capsys: pytest.CaptureFixture[str], few: Store
) -> None:
    newest_first = list(reversed(few.created))
    code, first, notes = task_list(capsys, few, "--limit", "10")
    assert code == 0 and [line.split()[0] for line in first] == newest_first[:10]
    assert notes == [f"more: codeflux task list --before {newest_first[9]} --limit 10"]  # on stderr
    _, second, notes = task_list(capsys, few, "--limit", "10", "--before", newest_first[9])
    assert [line.split()[0] for line in second] == newest_first[10:20] and notes[0].startswith("more: ")
    _, last, notes = task_list(capsys, few, "--limit", "10", "--before", newest_first[19])
    assert [line.split()[0] for line in last] == newest_first[20:] and notes == []  # the end: no "more:"
    _, everything, notes = task_list(capsys, few, "--limit", "4", "--all")
    assert [line.split()[0] for line in everything] == newest_first and notes == []
    _, found, _ = task_list(capsys, few, "--search", "ITEM-17", "--limit", "1")
    assert [line.split(maxsplit=2)[2] for line in found] == ["Task 17"]
    _, two, notes = task_list(capsys, few, "--search", "item-1", "--limit", "2")
    assert [line.split(maxsplit=2)[2] for line in two] == ["Task 19", "Task 18"]
    assert notes == [f"more: codeflux task list --before {newest_first[5]} --limit 2 --search item-1"]
    assert task_list(capsys, few, "--search", "no such words") == (0, [], ["no task matches"])
    assert task_list(capsys, few, "--before", "tsk_nonsense!")[0] == 2
