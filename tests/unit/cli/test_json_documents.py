"""The ``--json`` documents keep their shape: every key and the type of every value are pinned here, so a change
of shape fails a test (docs/using.md, "JSON output"). Money is an exact decimal string, never a float; unknown is
null; no ANSI escape reaches the output. Each command runs in process on a real database and repository."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from codeflux.cli.context import CliContext
from codeflux.cli.main import main
from tests.fixtures.repos import make_repository

NULL = type(None)
STR_OR_NULL = (str, NULL)
MONEY = {"amount": str, "currency": str, "minor_units": int}
MONEY_OR_NULL = (MONEY, NULL)

TASK_SUMMARY = {"task_id": str, "title": str, "state": str, "revision": int, "repository_root": str,
                "session_id": str, "needs_attention": bool, "created_at": STR_OR_NULL}
TASK_LIST = {"format": int, "tasks": [TASK_SUMMARY], "has_more": bool, "next_before": STR_OR_NULL}

PLAN = {"revision": int, "sha256": str, "decision": str, "feedback": STR_OR_NULL, "author_label": STR_OR_NULL,
        "scope_summary": str, "scope_paths": [str],
        "steps": [{"title": str, "detail": str, "expected_files": [str]}], "examples": [str], "open_questions": int,
        "forecast_cost": ({"low": MONEY_OR_NULL, "high": MONEY_OR_NULL}, NULL)}
BUDGET = {"revision": int, "hard_limit": MONEY, "warning": MONEY_OR_NULL, "spent": MONEY_OR_NULL,
          "reserved": MONEY_OR_NULL, "remaining": MONEY_OR_NULL, "tokens_used": int, "tokens_reserved": int,
          "token_limit": (int, NULL), "exhausted": bool, "pending_decisions": [int],
          "prices": [{"snapshot_id": (int, NULL), "provider": STR_OR_NULL, "model": STR_OR_NULL,
                      "revision": (int, NULL), "source": STR_OR_NULL, "source_detail": STR_OR_NULL,
                      "effective_date": STR_OR_NULL, "recorded_at": STR_OR_NULL, "request_ids": [str]}]}
TASK = {
    "task_id": str, "title": str, "requirement": str, "state": str, "revision": int, "repository_root": str,
    "base_revision": STR_OR_NULL, "worktree": STR_OR_NULL, "worktree_exists": bool,
    "worktree_disposal": ({"removed": bool, "branch_deleted": bool, "checkpoint_refs_deleted": int,
                           "refusal": STR_OR_NULL, "detail": STR_OR_NULL}, NULL),
    "session_id": str, "provider_label": STR_OR_NULL, "provider_basis": STR_OR_NULL, "provider_source": STR_OR_NULL,
    "provider_reason": STR_OR_NULL, "endpoint_approval": ({"provider": str, "base_url": str}, NULL),
    "run_active": bool, "last_outcome": STR_OR_NULL,
    "through_sequence": int, "plan": (PLAN, NULL),
    "attempt": ({"attempt": int, "plan_revision": int, "open": bool, "stopped_at": STR_OR_NULL}, NULL),
    "budget": (BUDGET, NULL),
    "pending_approvals": [{"request_id": str, "tool": str, "arguments": [{"name": str, "value": str}],
                           "capabilities": [str], "scope": str, "reason": str, "operation_identity": str}],
    "actions": [{"action": str, "available": bool, "reason": STR_OR_NULL}],
}
RECOVERY = {"known": [str], "ambiguous": [{"item_id": str, "kind": str, "summary": str, "outcome": STR_OR_NULL}],
            "recommended": STR_OR_NULL, "why": STR_OR_NULL, "allowed": [str],
            "refused": [{"action": str, "reason": str}]}
TASK_SHOW = {"format": int, "task": TASK, "recovery": (RECOVERY, NULL)}
RUN = {"format": int, "exit_code": int, "task": TASK, "diff_identity": STR_OR_NULL}
PROVIDER_LIST = {"format": int, "providers": [{"name": str, "credential_stored": (bool, NULL),
                                               "reference_recorded": bool, "unknown_reason": STR_OR_NULL}]}
DOCTOR = {"format": int, "blocking": [str], "checks": [{"id": str, "title": str, "status": str, "summary": str,
                                                        "remediation": STR_OR_NULL, "blocks": bool}]}


def assert_shape(value: Any, schema: Any, where: str = "$") -> None:
    """``value`` has exactly ``schema``'s shape: a dict schema names every key, a one-item list schema types each
    item, a tuple is a choice, a type is a leaf (a bool is never taken for an int; a float matches nothing)."""
    if isinstance(schema, tuple):
        failures = []
        for choice in schema:
            try:
                assert_shape(value, choice, where)
            except AssertionError as failure:
                failures.append(str(failure))
            else:
                return
        raise AssertionError(f"{where}: none of the choices fit: {failures}")
    if isinstance(schema, dict):
        assert isinstance(value, dict), f"{where}: {value!r} is not an object"
        assert set(value) == set(schema), f"{where}: keys {sorted(value)} != {sorted(schema)}"
        for key, item in schema.items():
            assert_shape(value[key], item, f"{where}.{key}")
    elif isinstance(schema, list):
        assert isinstance(value, list), f"{where}: {value!r} is not a list"
        for index, item in enumerate(value):
            assert_shape(item, schema[0], f"{where}[{index}]")
    else:
        assert type(value) is schema, f"{where}: {value!r} is a {type(value).__name__}, not {schema.__name__}"


def _json_of(*arguments: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(arguments), CliContext(stdout=out, stderr=io.StringIO(), environ={}))
    text = out.getvalue()
    assert "\x1b" not in text
    return code, json.loads(text)  # exactly one document: json.loads refuses anything after it


@pytest.fixture
def task_data(tmp_path: Path) -> tuple[Path, str]:
    """A data directory with two tasks on a real repository; returns it and the newer task's id."""
    data, repo = tmp_path / "data", make_repository(tmp_path).path
    for requirement in ("add mul", "add div"):
        assert main(["--data-dir", str(data), "task", "create", "--repo", str(repo), "--requirement", requirement],
                    CliContext(stdout=io.StringIO(), stderr=io.StringIO(), environ={})) == 0
    code, listed = _json_of("--data-dir", str(data), "task", "list", "--json")
    assert code == 0
    return data, listed["tasks"][0]["task_id"]


def test_task_list_and_task_show_keep_their_shape(task_data: tuple[Path, str]) -> None:
    data, newest = task_data
    code, listed = _json_of("--data-dir", str(data), "task", "list", "--json")
    assert code == 0
    assert_shape(listed, TASK_LIST)
    assert [t["title"] for t in listed["tasks"]] == ["add div", "add mul"] and listed["next_before"] is None
    code, page = _json_of("--data-dir", str(data), "task", "list", "--limit", "1", "--json")
    assert_shape(page, TASK_LIST)
    assert page["has_more"] is True and page["next_before"] == newest and len(page["tasks"]) == 1
    code, shown = _json_of("--data-dir", str(data), "task", "show", newest, "--json")
    assert code == 0
    assert_shape(shown, TASK_SHOW)
    assert shown["task"]["task_id"] == newest and shown["task"]["plan"] is None and shown["recovery"] is None
    # no call yet: the provider the task pinned when it was created, and why that one was in force
    assert (shown["task"]["provider_basis"], shown["task"]["provider_source"], shown["task"]["endpoint_approval"]) == (
        "pinned", "default", None)
    assert "nothing was chosen" in shown["task"]["provider_reason"]


def test_run_keeps_its_shape_with_exact_money(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, demo = tmp_path / "data", tmp_path / "demo"
    assert main(["demo", "init", str(demo)]) == 0
    capsys.readouterr()
    code = main(["--data-dir", str(data), "run", "--repo", str(demo), "--requirement-file", str(demo / "TASK.md"),
                 "--budget", "0.25", "--json"])  # no --yes: it stops after the plan, exit 4
    captured = capsys.readouterr()
    assert code == 4
    document = json.loads(captured.out)
    assert_shape(document, RUN)
    assert document["exit_code"] == 4 and document["task"]["state"] == "awaiting-plan-approval"
    assert document["task"]["budget"]["hard_limit"] == {"amount": "0.25", "currency": "USD", "minor_units": 25}
    assert document["task"]["plan"]["revision"] == 1
    assert "plan approval needed" in captured.err  # the transcript is for the person, on stderr


def test_provider_list_and_doctor_keep_their_shape(tmp_path: Path) -> None:
    code, providers = _json_of("--data-dir", str(tmp_path / "data"), "provider", "list", "--json")
    assert code == 0
    assert_shape(providers, PROVIDER_LIST)
    assert {p["name"] for p in providers["providers"]} >= {"anthropic", "openai"}
    code, doctor = _json_of("--data-dir", str(tmp_path / "data"), "doctor", "--json", "--port", "1")
    assert code in (0, 3)
    assert_shape(doctor, DOCTOR)
    assert not (tmp_path / "data").exists()  # neither created a data directory


def test_the_shape_check_refuses_a_float_a_missing_key_and_a_bool_for_an_int() -> None:
    # the checker's own positive control: each of these would let a changed shape through
    for value, schema in (({"amount": 0.25, "currency": "USD", "minor_units": 25}, MONEY),
                          ({"amount": "0.25", "currency": "USD"}, MONEY),
                          ({"amount": "0.25", "currency": "USD", "minor_units": True}, MONEY)):
        with pytest.raises(AssertionError):
            assert_shape(value, schema)
