"""The migrations that rebuild ``task_provider_pins``: the one widening its ``source`` (issue 21 item 4) and the one
letting anthropic and openai pins keep a base URL (issue 20 item 6). A database holding pins migrates with every row
kept and the pins' immutability trigger back; what each widens is accepted, what stays refused is refused. Each is
found by its name, not its number (the number is settled when branches merge)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeflux.domain.errors import StoreError
from codeflux.domain.ids import TaskId
from codeflux.domain.tasks import TaskState
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.migrations import load_shipped_migrations, migrate_database
from codeflux.store.opening import open_store
from codeflux.store.tasks import insert_task
from tests.integration.test_migration_tool_request_sources import rows

_NAME = "pin_source_environment"


def test_pins_survive_the_rebuild_and_the_environment_becomes_a_source(data_location: DataLocation) -> None:
    shipped = load_shipped_migrations()
    [index] = [i for i, m in enumerate(shipped) if _NAME in m.name]
    migrate_database(data_location, migrations=shipped[:index])  # the schema just before
    db = Database.open(data_location.database)
    tasks = [TaskId.from_entropy(os.urandom(16)) for _ in range(3)]
    try:
        for number, task_id in enumerate(tasks):
            db.write(lambda tx, task_id=task_id: insert_task(tx, task_id=task_id, repository_root=Path("/repo"),
                                                            worktree=Path("/worktree"), state=TaskState.DRAFT))
            db.write(lambda tx, task_id=task_id, number=number: tx.execute(
                "INSERT INTO task_provider_pins (task_id, provider, cheap_model, capable_model, base_url, uses_key,"
                " source, pinned_at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (task_id.value, *[("scripted", "", "", "", 1, "flag"),
                                  ("anthropic", "claude-haiku-4-5", "claude-sonnet-4-5", "", 1, "config"),
                                  ("openai-compatible", "m", "m", "http://127.0.0.1:4000/v1", 0, "settings")][number],
                 1000 + number)))
        with pytest.raises(StoreError):  # the old CHECK: no 'environment'
            db.write(lambda tx: tx.execute("INSERT INTO task_provider_pins VALUES (?, 'scripted', '', '', '', 1,"
                                           " 'environment', 1)", (tasks[0].value,)))
    finally:
        db.close()
    before = rows(data_location, "SELECT * FROM task_provider_pins ORDER BY pinned_at_us")

    report = migrate_database(data_location, migrations=shipped[:index + 1])

    assert report.applied == (shipped[index].version,) and report.backup_path is not None
    assert rows(data_location, "SELECT * FROM task_provider_pins ORDER BY pinned_at_us") == before
    assert rows(data_location, "PRAGMA foreign_key_check") == [] and rows(data_location, "PRAGMA integrity_check") == [
        ("ok",)]
    assert rows(data_location, "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name ="
                               " 'task_provider_pins'") == [("task_provider_pins_are_immutable",)]
    assert rows(data_location, "SELECT count(*) FROM sqlite_schema WHERE name = 'task_provider_pins_rebuilt'") == [
        (0,)]

    migrate_database(data_location)
    db = open_store(data_location, create=False, migrate=False)
    try:
        fresh, other = TaskId.from_entropy(os.urandom(16)), TaskId.from_entropy(os.urandom(16))
        for task_id in (fresh, other):
            db.write(lambda tx, task_id=task_id: insert_task(tx, task_id=task_id, repository_root=Path("/repo"),
                                                            worktree=Path("/w"), state=TaskState.DRAFT))
        db.write(lambda tx: tx.execute("INSERT INTO task_provider_pins VALUES (?, 'scripted', '', '', '', 1,"
                                       " 'environment', 5)", (fresh.value,)))
        with pytest.raises(StoreError):  # still immutable
            db.write(lambda tx: tx.execute("UPDATE task_provider_pins SET source = 'demo'"))
        with pytest.raises(StoreError):  # any other source still refused
            db.write(lambda tx: tx.execute("INSERT INTO task_provider_pins VALUES (?, 'scripted', '', '', '', 1,"
                                           " 'someone', 6)", (other.value,)))
    finally:
        db.close()


def test_pins_survive_the_second_rebuild_and_anthropic_and_openai_pins_keep_a_base_url(
        data_location: DataLocation) -> None:
    shipped = load_shipped_migrations()
    [index] = [i for i, m in enumerate(shipped) if "pin_base_url_any_provider" in m.name]
    migrate_database(data_location, migrations=shipped[:index])
    db = Database.open(data_location.database)
    tasks = [TaskId.from_entropy(os.urandom(16)) for _ in range(6)]
    pin = "INSERT INTO task_provider_pins VALUES (?, ?, ?, ?, ?, ?, 'flag', ?)"
    try:
        for task_id in tasks:
            db.write(lambda tx, task_id=task_id: insert_task(tx, task_id=task_id, repository_root=Path("/repo"),
                                                            worktree=Path("/worktree"), state=TaskState.DRAFT))
        db.write(lambda tx: tx.execute(pin, (tasks[0].value, "anthropic", "claude-haiku-4-5", "", "", 1, 1)))
        db.write(lambda tx: tx.execute(pin, (tasks[1].value, "openai-compatible", "m", "m",
                                             "http://127.0.0.1:4000/v1", 0, 2)))
        with pytest.raises(StoreError):  # the old CHECK: a base URL for openai-compatible only
            db.write(lambda tx: tx.execute(pin, (tasks[2].value, "anthropic", "claude-haiku-4-5", "",
                                                 "https://proxy.example.com", 1, 3)))
    finally:
        db.close()
    before = rows(data_location, "SELECT * FROM task_provider_pins ORDER BY pinned_at_us")

    report = migrate_database(data_location, migrations=shipped[:index + 1])

    assert report.applied == (shipped[index].version,)
    assert rows(data_location, "SELECT * FROM task_provider_pins ORDER BY pinned_at_us") == before
    assert rows(data_location, "PRAGMA foreign_key_check") == [] and rows(data_location, "PRAGMA integrity_check") == [
        ("ok",)]
    assert rows(data_location, "SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name ="
                               " 'task_provider_pins'") == [("task_provider_pins_are_immutable",)]
    migrate_database(data_location)
    db = open_store(data_location, create=False, migrate=False)
    try:
        db.write(lambda tx: tx.execute(pin, (tasks[2].value, "anthropic", "claude-haiku-4-5", "",
                                             "https://proxy.example.com", 1, 3)))
        db.write(lambda tx: tx.execute(pin, (tasks[3].value, "openai", "gpt-5-mini", "",
                                             "https://proxy.example.com/v1", 1, 4)))
        with pytest.raises(StoreError):  # the scripted provider calls no endpoint
            db.write(lambda tx: tx.execute(pin, (tasks[4].value, "scripted", "", "", "https://x.example.com", 1, 5)))
        with pytest.raises(StoreError):  # "no key" stays openai-compatible's
            db.write(lambda tx: tx.execute(pin, (tasks[5].value, "anthropic", "claude-haiku-4-5", "",
                                                 "https://proxy.example.com", 0, 6)))
        with pytest.raises(StoreError):  # still immutable
            db.write(lambda tx: tx.execute("UPDATE task_provider_pins SET base_url = ''"))
    finally:
        db.close()
