"""`codeflux start` as a user runs it: a real process, a real loopback port, real signals."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import pytest
from google.protobuf.message import Message

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.instance import hold_instance_lock
from codeflux.server.client import call_unary, connect_address, unix_channel
from codeflux.store.location import resolve_data_location
from tests.fixtures.cli import run_codeflux
from tests.fixtures.processes import wait_until_no_process_works_under
from tests.fixtures.tasks import a_repository

M = TypeVar("M", bound=Message)


@dataclass
class Started:
    process: subprocess.Popen[str]
    origin: str
    launch_url: str
    lines: list[str]


def _start(data_dir: Path, *extra: str, environ: dict[str, str] | None = None) -> Started:
    process = subprocess.Popen(
        [sys.executable, "-m", "codeflux", "--data-dir", str(data_dir), "start", "--no-browser",
         "--address", "127.0.0.1:0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "BROWSER": "false", **(environ or {})},
    )
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("open: "):
            launch = line.removeprefix("open: ").strip()
            parts = urlsplit(launch)
            return Started(process, f"{parts.scheme}://{parts.netloc}", launch, lines)
    process.kill()
    _, err = process.communicate(timeout=30)
    raise AssertionError(f"codeflux start printed no URL: {lines} {err}")


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Started]:
    running = _start(tmp_path / "data")
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.communicate(timeout=30)


def _get(origin: str, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    """GET ``path`` from ``origin`` as a browser would (``*.localhost`` is loopback; Host names the origin)."""
    parts = urlsplit(origin)
    connection = http.client.HTTPConnection(connect_address(parts.hostname), parts.port, timeout=30)
    connection.request("GET", path, headers={"Host": parts.netloc, **(headers or {})})
    return connection.getresponse()


def _stop(started: Started) -> str:
    started.process.send_signal(signal.SIGTERM)
    out, _ = started.process.communicate(timeout=90)
    assert started.process.returncode == 0
    return out


@pytest.mark.parametrize("address", ["0.0.0.0:0", "192.168.1.10:47311", "example.com:80", "[::ffff:127.0.0.1]:0",
                                     "127.0.0.2:0", "127.0.0.2", "127.0.0.1", "127.0.0.1:99999", ":47311"])
def test_a_non_loopback_or_malformed_address_is_refused_with_exit_2(tmp_path: Path, address: str) -> None:
    result = run_codeflux("start", "--no-browser", "--address", address, data_dir=tmp_path / "data")
    assert result.code == 2, result
    assert "loopback" in result.err or "HOST:PORT" in result.err or "port" in result.err
    assert not (tmp_path / "data").exists()  # refused before anything is written (no database, no lock files)


def test_start_migrates_prints_a_one_time_launch_url_and_serves_the_page(started: Started, tmp_path: Path) -> None:
    assert (tmp_path / "data" / "codeflux.sqlite3").exists()
    plain = _get(started.origin, "/")
    assert plain.status == 200 and plain.getheader("Set-Cookie") is None
    launch = urlsplit(started.launch_url)
    first = _get(started.origin, f"{launch.path}?{launch.query}")
    assert first.status == 200
    cookie = first.getheader("Set-Cookie") or ""
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Domain" not in cookie
    again = _get(started.origin, f"{launch.path}?{launch.query}")
    assert again.status == 403 and again.getheader("Set-Cookie") is None
    secret = cookie.split(";")[0].split("=", 1)[1]
    assert all(secret not in line for line in started.lines)
    app = _get(started.origin, "/", {"Cookie": cookie.split(";")[0]})
    assert app.status == 200
    assert b"<script" in app.read()


def test_start_with_a_real_provider_and_no_model_takes_the_built_in_models(tmp_path: Path) -> None:
    """Issue 21's "Done means" typed as written — `ANTHROPIC_API_KEY=… codeflux start --provider anthropic` — exited 2
    ("--provider anthropic needs --cheap-model"): with no model named anywhere, the provider's built-in pair is used,
    the first-run screen says the key comes from the environment, and the key is nowhere in the data directory."""
    key = "sk-ant-api03-" + "k" * 48
    running = _start(tmp_path / "data", "--provider", "anthropic", environ={"ANTHROPIC_API_KEY": key,
                                                                            "CODEFLUX_CHEAP_MODEL": ""})
    try:
        assert "provider: anthropic (claude-haiku-4-5)" in running.lines[0], running.lines
        with unix_channel(tmp_path / "data" / "coordinator" / "coordinator.sock") as channel:
            overview = call_unary(channel, "/codeflux.v1.WorkspaceService/GetOverview", pb.GetOverviewRequest(),
                                  pb.Overview)
            repository = a_repository(tmp_path / "repo")
            task = call_unary(channel, "/codeflux.v1.TaskService/CreateTask", pb.CreateTaskRequest(
                control=common_pb2.MutationControl(idempotency_key="built-in-models"),
                repository_path=str(repository.root), requirement="Make add() handle negative numbers"), pb.TaskView)
        anthropic = {p.name: p for p in overview.providers}["anthropic"]
        assert anthropic.key_source == "environment (ANTHROPIC_API_KEY)"
        assert anthropic.detail.startswith("a key is given in the environment")
        assert task.provider_label == "anthropic (claude-haiku-4-5)", task  # the task pins the built-in pair
    finally:
        _stop(running)
    for path in (tmp_path / "data").rglob("*"):
        assert not path.is_file() or key.encode() not in path.read_bytes(), path


def test_start_serves_the_ui_on_its_own_host_name_kept_per_data_directory(started: Started, tmp_path: Path) -> None:
    name = urlsplit(started.origin).hostname or ""
    assert re.fullmatch(r"cf-[a-z2-7]{20}\.localhost", name), started.lines
    port = urlsplit(started.origin).port
    assert _get(f"http://127.0.0.1:{port}", "/").status == 421  # the address alone is not the UI's host
    assert _get(started.origin, "/").status == 200
    assert any("codeflux start --ip-host" in line for line in started.lines)  # the fallback is said, with its risk
    _stop(started)
    again = _start(tmp_path / "data")
    assert urlsplit(again.origin).hostname == name  # the same name after a restart
    _stop(again)
    renewed = _start(tmp_path / "data", "--new-host-name")
    fresh = urlsplit(renewed.origin).hostname or ""
    assert fresh != name and re.fullmatch(r"cf-[a-z2-7]{20}\.localhost", fresh)
    assert any("new host name" in line for line in renewed.lines)
    _stop(renewed)
    other = _start(tmp_path / "d2")
    assert urlsplit(other.origin).hostname not in (name, fresh)  # another data directory, another name
    _stop(other)


def test_ip_host_is_the_explicit_fallback_and_warns_every_time(tmp_path: Path) -> None:
    started = _start(tmp_path / "data", "--ip-host")
    try:
        assert urlsplit(started.origin).hostname == "127.0.0.1"
        assert _get(started.origin, "/").status == 200
        launch = urlsplit(started.launch_url)
        assert _get(started.origin, f"{launch.path}?{launch.query}").status == 200
    finally:
        started.process.send_signal(signal.SIGTERM)
        _, err = started.process.communicate(timeout=90)
    assert "--ip-host" in err and "every other server" in err and "docs/security.md" in err


def _printed_link(out: str) -> str:
    links = [line.removeprefix("open: ").strip() for line in out.splitlines() if line.startswith("open: ")]
    assert len(links) == 1, out
    return links[0]


def _redeem(origin: str, launch_url: str) -> int:
    launch = urlsplit(launch_url)
    assert f"{launch.scheme}://{launch.netloc}" == origin
    return _get(origin, f"{launch.path}?{launch.query}").status


def test_codeflux_open_prints_a_fresh_link_that_redeems_once(started: Started, tmp_path: Path) -> None:
    assert _redeem(started.origin, started.launch_url) == 200  # start's own link is spent …
    opened = run_codeflux("open", "--no-browser", data_dir=tmp_path / "data")
    assert opened.code == 0, opened
    link = _printed_link(opened.out)
    assert link != started.launch_url and "works once" in opened.out
    assert _redeem(started.origin, link) == 200  # … and `open` gets the person back in
    assert _redeem(started.origin, link) == 403  # once
    again = _printed_link(run_codeflux("open", "--no-browser", data_dir=tmp_path / "data").out)
    assert again != link and _redeem(started.origin, again) == 200  # every call a fresh one
    assert started.process.poll() is None  # the coordinator (and its tasks) kept running


def test_a_second_start_prints_a_fresh_link_into_the_running_one(started: Started, tmp_path: Path) -> None:
    second = run_codeflux("start", "--no-browser", "--address", "127.0.0.1:0", data_dir=tmp_path / "data")
    assert second.code == 0, second
    assert f"pid {started.process.pid}" in second.out and "already running" in second.out
    link = _printed_link(second.out)
    assert _redeem(started.origin, link) == 200 and _redeem(started.origin, link) == 403
    assert started.process.poll() is None


def test_open_without_a_coordinator_names_start_and_exits_3(tmp_path: Path) -> None:
    data = tmp_path / "data"
    opened = run_codeflux("open", "--no-browser", data_dir=data)
    assert opened.code == 3, opened
    assert "no codeflux coordinator serves this data directory" in opened.err and "`codeflux start`" in opened.err
    assert "open: " not in opened.out and not (data / "codeflux.sqlite3").exists()


def test_a_start_that_cannot_reach_the_lock_holder_still_names_it_with_exit_3(tmp_path: Path) -> None:
    """A lock holder without a socket (a coordinator still starting): nothing to ask for a link, so the
    refusal names it (the positive control of the two tests above)."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    location = resolve_data_location(str(data), {})
    with hold_instance_lock(location) as held:
        held.announce("http://cf-test.localhost:1")
        second = run_codeflux("start", "--no-browser", "--address", "127.0.0.1:0", data_dir=data)
    assert second.code == 3, second
    assert f"pid {os.getpid()}" in second.err and "already serves this data directory" in second.err
    assert "open: " not in second.out


def test_the_cli_talks_to_the_running_coordinator_over_its_unix_socket(started: Started, tmp_path: Path) -> None:
    data = tmp_path / "data"
    socket_path = data / "coordinator" / "coordinator.sock"
    assert socket_path.is_socket()
    assert socket_path.stat().st_mode & 0o777 == 0o600
    assert (data / "coordinator").stat().st_mode & 0o777 == 0o700
    listed = run_codeflux("task", "list", data_dir=data)
    assert listed.code == 0, listed
    assert f"via the running coordinator (pid {started.process.pid}" in listed.err
    # every state command goes there now, recovery included (it used to be refused while a coordinator ran)
    recovery = run_codeflux("task", "recovery", data_dir=data)
    assert recovery.code == 0 and recovery.out == "no task needs recovery\n", recovery
    assert f"via the running coordinator (pid {started.process.pid}" in recovery.err
    budget = run_codeflux("budget", "show", "--task", "tsk_" + "0" * 32, data_dir=data)
    assert budget.code == 1 and f"pid {started.process.pid}" in budget.err, budget  # no such task


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_coordinator_cleanly_with_exit_0(started: Started, tmp_path: Path, number: int) -> None:
    started.process.send_signal(number)
    out, err = started.process.communicate(timeout=90)
    assert started.process.returncode == 0, err
    assert "codeflux stopped" in out
    wal = tmp_path / "data" / "codeflux.sqlite3-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    assert not (tmp_path / "data" / "coordinator" / "coordinator.sock").exists()
    again = _start(tmp_path / "data")  # the instance lock was released
    again.process.send_signal(signal.SIGTERM)
    again.process.communicate(timeout=90)
    assert again.process.returncode == 0


def test_a_signal_pauses_an_active_run_with_a_shutdown_checkpoint(tmp_path: Path) -> None:
    """The journey's first half over the coordinator's Unix socket (the CLI's path), then SIGTERM while the
    run waits for a decision: exit 0, the task paused, a `shutdown` checkpoint recorded, no worker left."""
    data = tmp_path / "data"
    running = _start(data, "--demo")
    try:
        demo = next(line for line in running.lines if line.startswith("demo: sample repository at "))
        repository = demo.removeprefix("demo: sample repository at ").split(";")[0]
        requirement = (Path(repository) / "TASK.md").read_text()
        keys = iter(range(1, 100))

        def control() -> common_pb2.MutationControl:
            return common_pb2.MutationControl(idempotency_key=f"signal-test-{next(keys)}")

        with unix_channel(data / "coordinator" / "coordinator.sock") as channel:
            def call(method: str, request: Message, reply: type[M]) -> M:
                return call_unary(channel, f"/codeflux.v1.{method}", request, reply)

            task = call("TaskService/CreateTask", pb.CreateTaskRequest(
                control=control(), repository_path=repository, requirement=requirement), pb.TaskView)
            call("TaskService/SetBudget", pb.SetBudgetRequest(control=control(), task_id=task.task_id, choice="set",
                                                               hard_limit="1.00", currency="USD"), pb.TaskView)
            planned = call("TaskService/DraftPlan", pb.DraftPlanRequest(control=control(), task_id=task.task_id),
                           pb.TaskView)
            call("TaskService/ApprovePlan", pb.ApprovePlanRequest(
                control=control(), task_id=task.task_id, revision=planned.plan.revision,
                sha256=planned.plan.sha256), pb.TaskView)
            call("TaskService/StartTask", pb.StartTaskRequest(
                control=control(), task_id=task.task_id, plan_revision=planned.plan.revision), pb.TaskView)
            deadline = time.monotonic() + 120
            while call("TaskService/GetTask", pb.GetTaskRequest(task_id=task.task_id),
                       pb.TaskView).state != "awaiting-authority":
                assert time.monotonic() < deadline, "the run never asked for the test command"
                time.sleep(0.2)
        remote = run_codeflux("task", "show", task.task_id, data_dir=data)  # the CLI, over the socket
        assert remote.code == 0 and "via the running coordinator" in remote.err, remote
        assert "state        awaiting-authority" in remote.out and "waiting      treq_" in remote.out
        running.process.send_signal(signal.SIGTERM)
        out, err = running.process.communicate(timeout=120)
        assert running.process.returncode == 0, err
        assert "codeflux stopped" in out
    finally:
        if running.process.poll() is None:
            running.process.kill()
            running.process.communicate(timeout=30)
    shown = run_codeflux("task", "show", task.task_id, data_dir=data)
    assert "state        paused" in shown.out, shown
    checkpoints = run_codeflux("inspect", "checkpoints", "--json", data_dir=data)
    assert checkpoints.code == 0 and '"shutdown"' in checkpoints.out, checkpoints
    assert wait_until_no_process_works_under(data) == []


def test_provider_approve_endpoint_goes_through_the_running_coordinator_and_in_process_without_one(
        tmp_path: Path) -> None:
    """`codeflux provider approve-endpoint` wrote the approval in its own process even while `codeflux start` served
    the data directory. Now it is `SettingsService/ApproveEndpoint` over the coordinator's socket (the coordinator
    records it and its event); without a coordinator the same call runs in process; the output is the same."""
    data = tmp_path / "data"
    running = _start(data)
    try:
        served = run_codeflux("provider", "approve-endpoint", "--name", "openai-compatible", "--base-url",
                              "http://127.0.0.1:4000/v1/", data_dir=data)
        assert served.code == 0, served.err
        assert "codeflux provider approve-endpoint: via the running coordinator" in served.err
        assert served.out == ("provider openai-compatible: endpoint http://127.0.0.1:4000/v1 approved "
                              "(codeflux may now send requests there)\n")
        with unix_channel(data / "coordinator" / "coordinator.sock") as channel:
            seen = call_unary(channel, "/codeflux.v1.SettingsService/GetSettings", pb.GetSettingsRequest(),
                              pb.SettingsView)
        assert [(a.provider, a.base_url) for a in seen.endpoint_approvals] == [
            ("openai-compatible", "http://127.0.0.1:4000/v1")]
        refused = run_codeflux("provider", "approve-endpoint", "--name", "openai", "--base-url",
                               "http://example.com/v1", data_dir=data)
        assert refused.code == 2 and "https" in refused.err, refused.err
    finally:
        _stop(running)
    alone = run_codeflux("provider", "approve-endpoint", "--name", "openai-compatible", "--base-url",
                         "http://127.0.0.1:5000/v1", data_dir=data)
    assert alone.code == 0, alone.err
    assert "via" not in alone.err
    assert alone.out == ("provider openai-compatible: endpoint http://127.0.0.1:5000/v1 approved "
                         "(codeflux may now send requests there)\n")
    fresh = run_codeflux("provider", "approve-endpoint", "--name", "openai-compatible", "--base-url",
                         "http://127.0.0.1:4000/v1", data_dir=tmp_path / "new")
    assert fresh.code == 0 and (tmp_path / "new" / "codeflux.sqlite3").exists(), fresh.err
