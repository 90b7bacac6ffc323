"""The headless demo through a real LiteLLM proxy (issue 21, item 10 and "## Tests").

LiteLLM (pinned in requirements/litellm.lock, installed by ``cmd/codeflux-dev setup`` into a venv of its own) runs
as users run it, ``litellm --config CONFIG --host 127.0.0.1 --port N``, with a master key and one model whose
replies LiteLLM mocks — ``mock_response`` for the planner's JSON and ``mock_tool_calls`` for the implementation
loop's ``edit_file``, ``run_command`` and ``finish``, the demo script's turns chosen per request by a proxy callback
(tests/fixtures/litellm_proxy.py). codeflux's ``openai-compatible`` provider reaches it on loopback with the master
key from ``CODEFLUX_OPENAI_COMPATIBLE_API_KEY`` (no credential store), after approving the endpoint and pricing
the model as a user does. The task must reach review priced from the usage the proxy reported — usage without
``prompt_tokens_details``, which used to make every call an unknown charge that paused the run — with real workers,
real git and the demo's real tests; nothing may leave the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from codeflux.providers.chat_completions import NO_CACHE_REPORTED
from tests.fixtures.cli import run_codeflux
from tests.fixtures.litellm_proxy import MOCK_MODEL, litellm_proxy

# The proxy starts in ≈6 s idle but took 40 s in a loaded run, and the demo's pipeline 47–184 s: over the suite's
# 300 s per test at worst, so this one test gets 540 s (the proxy's own wait is ≤ 120 s, the run's ≤ 280 s).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(540)]

DEMO_SCRIPT = Path(__file__).resolve().parents[2] / "codeflux" / "cli" / "demo_files" / "script.json"
RUN_TIMEOUT_S = 280


def test_the_headless_demo_runs_to_review_through_a_real_litellm_proxy_priced_from_its_reported_usage(
        tmp_path: Path) -> None:
    data, repo = tmp_path / "data", tmp_path / "demo"
    assert run_codeflux("demo", "init", str(repo), data_dir=data).code == 0
    with litellm_proxy(tmp_path / "litellm", script=DEMO_SCRIPT) as proxy:
        key_env = {"CODEFLUX_OPENAI_COMPATIBLE_API_KEY": proxy.master_key}
        approved = run_codeflux("provider", "approve-endpoint", "--name", "openai-compatible", "--base-url",
                                proxy.base_url, data_dir=data)
        assert approved.code == 0, approved.err
        priced = run_codeflux("prices", "set", "--provider", "openai-compatible", "--model", MOCK_MODEL,
                              "--input", "1.00", "--output", "2.00", "--currency", "USD", data_dir=data)
        assert priced.code == 0, priced.err

        started = time.monotonic()
        ran = subprocess.run(  # the run outlasts run_codeflux's 120 s under a loaded suite
            [sys.executable, "-m", "codeflux", "--data-dir", str(data), "run", "--repo", str(repo),
             "--requirement-file", str(repo / "TASK.md"), "--provider", "openai-compatible",
             "--base-url", proxy.base_url, "--cheap-model", MOCK_MODEL, "--capable-model", MOCK_MODEL,
             "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--allow-check-tools", "--budget", "1.00", "--yes",
             "--json"],
            env={**os.environ, **key_env}, capture_output=True, text=True, stdin=subprocess.DEVNULL,
            timeout=RUN_TIMEOUT_S, check=False)
        run_s = time.monotonic() - started
        requests, responses = proxy.entries("request"), proxy.entries("response")
        outbound = proxy.outbound
        proxy_start_s = proxy.started_in_s
    print(f"litellm started in {proxy_start_s:.1f} s; the demo run took {run_s:.1f} s")

    assert ran.returncode == 0, ran.stderr[-4000:]
    document = json.loads(ran.stdout)
    task, budget = document["task"], document["task"]["budget"]
    assert task["state"] == "awaiting-review" and document["diff_identity"], ran.stderr[-4000:]
    assert task["provider_label"] == f"openai-compatible ({MOCK_MODEL})"

    # The proxy answered the planner once and the loop three times, each with the turn LiteLLM's mock carried.
    assert [(request["phase"], request["turn"], request["stream"]) for request in requests] == [
        ("plan", 0, False), ("run", 0, False), ("run", 1, False), ("run", 2, False)]
    assert [response["tool_calls"] for response in responses] == [[], ["edit_file"], ["run_command"], ["finish"]]
    usages = [response["usage"] for response in responses]
    assert all(usage["prompt_tokens_details"] is None for usage in usages)  # what made every charge unknown

    # codeflux recorded exactly the usage the proxy reported: no unknown charge, cache reads 0 by the endpoint's
    # capability (said in each call's record), tokens the reported ones rather than the reservation bound.
    rows = _model_requests(data / "codeflux.sqlite3")
    assert [row["provider"] for row in rows] == ["openai-compatible"] * 4
    assert {(row["base_url"], row["model"], row["state"]) for row in rows} == {
        (proxy.base_url, MOCK_MODEL, "succeeded")}
    assert [(row["input_tokens"], row["output_tokens"], row["cache_read_tokens"]) for row in rows] == [
        (usage["prompt_tokens"], usage["completion_tokens"], 0) for usage in usages]
    assert all(row["cost_known"] == 1 and row["cost_reason"] == NO_CACHE_REPORTED for row in rows)
    assert all(row["reserved_tokens"] > row["input_tokens"] + row["output_tokens"] for row in rows)
    assert [row["provider_request_id"] for row in rows] == [response["call_id"] for response in responses]
    assert budget["pending_decisions"] == [] and budget["reserved"]["minor_units"] == 0
    assert budget["tokens_used"] == sum(usage["total_tokens"] for usage in usages)
    assert budget["spent"]["minor_units"] == sum(row["cost_minor"] for row in rows) > 0

    # Nothing left the machine, and the key the proxy took is stored nowhere in codeflux's data.
    assert outbound == 0
    key = proxy.master_key.encode()
    assert [path for path in data.rglob("*") if path.is_file() and key in path.read_bytes()] == []

    accepted = run_codeflux("task", "accept", task["task_id"], "--identity", document["diff_identity"],
                            data_dir=data)
    assert accepted.code == 0, accepted.err


def _model_requests(database: Path) -> list[sqlite3.Row]:
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as connection:
        connection.row_factory = sqlite3.Row
        return connection.execute(
            "SELECT provider, base_url, model, state, input_tokens, output_tokens, cache_read_tokens, cost_minor, "
            "cost_known, cost_reason, reserved_tokens, provider_request_id FROM model_requests ORDER BY rowid"
        ).fetchall()
