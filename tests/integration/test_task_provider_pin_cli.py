"""A task created by the real ``codeflux task create`` (no coordinator: in process) pins the provider choice in
force; ``task show`` says so; ``task plan`` drafts with the pin after the choice changed (its endpoint still needs
the approval), and ``task resume`` drafts with the ``--provider`` the command itself names (its explicit choice)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.provider_choice import (
    ChoiceSource,
    ProviderChoice,
    read_task_pin,
    set_provider_choice,
)
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.ids import TaskId
from codeflux.domain.money import USD, Money
from codeflux.domain.tasks import TaskState
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.cli import run_codeflux
from tests.fixtures.tasks import a_repository, keys

ENDPOINT = "http://127.0.0.1:9/v1"  # never contacted: the endpoint is not approved, so nothing is sent


def test_a_task_created_on_the_command_line_pins_the_stored_choice_and_drafts_use_it_unless_flagged(
        db: Database, data_location: DataLocation, tmp_path: Path) -> None:
    set_provider_choice(db, ProviderChoice(provider="openai-compatible", cheap_model="local-model",
                                           base_url=ENDPOINT, uses_key=False), expected_revision=None)
    snapshot = a_repository(tmp_path / "clean")
    created = run_codeflux("task", "create", "--repo", str(snapshot.root), "--requirement", "Fix add",
                           data_dir=data_location.directory)
    assert created.code == 0, created.err
    found = re.search(r"task (tsk_[0-9a-z]+) created", created.out)
    assert found, created.out
    task_id = TaskId.parse(found.group(1))
    pin = read_task_pin(db, task_id)
    assert pin is not None and (pin.choice.base_url, pin.choice.uses_key, pin.source) == (
        ENDPOINT, False, ChoiceSource.SETTINGS)
    shown = run_codeflux("task", "show", task_id.value, data_dir=data_location.directory)
    assert f"provider     openai-compatible (local-model) at {ENDPOINT} (pinned when the task was created" in shown.out
    assert "pinned by    the choice stored in Settings → Providers" in shown.out  # why that provider was in force
    assert f"endpoint     {ENDPOINT} is not approved" in shown.out
    document = json.loads(run_codeflux("task", "show", task_id.value, "--json", data_dir=data_location.directory).out)
    assert {key: document["task"][key] for key in ("provider_basis", "provider_source", "endpoint_approval")} == {
        "provider_basis": "pinned", "provider_source": "settings",
        "endpoint_approval": {"provider": "openai-compatible", "base_url": ENDPOINT}}

    set_provider_choice(db, ProviderChoice(provider="scripted"), expected_revision=0)  # chosen since
    BudgetService(db).set_budget(task_id, hard_limit=Money.parse_decimal("1.00", currency=USD), expected_revision=None,
                                 idempotency_key=keys())
    pinned = run_codeflux("task", "plan", task_id.value, data_dir=data_location.directory)

    assert pinned.code == 4, pinned.out + pinned.err  # the pin's endpoint needs its approval: nothing was sent
    assert f"the openai-compatible endpoint {ENDPOINT} is not the default and has not been approved" in (
        pinned.out + pinned.err)
    service = TaskService(db, worktrees_root=data_location.worktrees)
    assert service.show(task_id).plan is None
    assert service.show(task_id).task.state is TaskState.PAUSED  # a refused first plan pauses the task

    flagged = run_codeflux("task", "resume", task_id.value, "--provider", "scripted", data_dir=data_location.directory)

    assert flagged.code == 0, flagged.out + flagged.err
    assert service.show(task_id).task.state is TaskState.AWAITING_PLAN_APPROVAL
    assert read_task_pin(db, task_id) == pin  # the pin never changes

    approved = run_codeflux("provider", "approve-endpoint", "--name", "openai-compatible", "--base-url", ENDPOINT,
                            data_dir=data_location.directory)
    assert approved.code == 0, approved.out + approved.err
    document = json.loads(run_codeflux("task", "show", task_id.value, "--json", data_dir=data_location.directory).out)
    assert (document["task"]["provider_source"], document["task"]["endpoint_approval"]) == ("settings", None)
