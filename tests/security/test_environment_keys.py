"""Provider keys given in the environment reach the provider and nothing else (issue 21 item 3).

A real headless ``codeflux run`` of the demo, as a subprocess entered like the console script (so it
re-executes itself without the keys and is handed them through a pipe), against a loopback OpenAI-compatible
server, with ``CODEFLUX_OPENAI_COMPATIBLE_API_KEY`` (the key the run uses) and ``ANTHROPIC_API_KEY`` set to
markers. Positive controls: the server received the first marker as the bearer key on every call, a real worker
ran the edit (its ``/proc/<pid>/environ`` read while the run waits on the model), and ``doctor`` names both
variables as the keys' sources. Then every byte codeflux wrote is scanned for both markers: the data directory
(SQLite and its WAL, worktrees, per-task homes), the run's and doctor's output, the worker's environment and a
``codeflux diagnostics export``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codeflux.cli.main import main
from tests.fixtures.cli import run_codeflux
from tests.fixtures.provider_servers import ProviderServer, a_test_key, json_reply, openai_completion

pytestmark = pytest.mark.security

MODEL = "demo-model"
USAGE = {"prompt_tokens": 400, "completion_tokens": 80, "total_tokens": 480,
         "prompt_tokens_details": {"cached_tokens": 0}}
DEMO_SCRIPT = Path(__file__).resolve().parents[2] / "codeflux" / "cli" / "demo_files" / "script.json"


def _worker_environments(parent: int) -> list[bytes]:
    """The environment of every ``codeflux.worker`` process descending from ``parent`` (root reads it although
    workers are undumpable; as another user this would be refused)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, pending = [], [parent]
    while pending:
        pid = pending.pop()
        pending.extend(children.get(pid, []))
        try:
            if b"codeflux.worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(Path(f"/proc/{pid}/environ").read_bytes())
        except OSError:
            continue
    return found


def test_environment_keys_reach_the_provider_and_never_sqlite_logs_workers_or_diagnostics(tmp_path: Path) -> None:
    used, other = a_test_key(), a_test_key()
    markers = (used.encode(), other.encode())
    repo, data = tmp_path / "demo", tmp_path / "data"
    keys = {"CODEFLUX_OPENAI_COMPATIBLE_API_KEY": used, "ANTHROPIC_API_KEY": other}
    assert main(["--data-dir", str(data), "demo", "init", str(repo)]) == 0  # in process: the set-up is not tested
    script = json.loads(DEMO_SCRIPT.read_text())
    plan = openai_completion(content=json.dumps(script["plan"][0]["json"]), usage=USAGE, model=MODEL)
    edit = script["run"][0]["tool_calls"][0]
    first_turn = openai_completion(content="Fixing add().", usage=USAGE, model=MODEL, finish_reason="tool_calls",
                                   tool_calls=[(edit["id"], edit["name"], json.dumps(edit["arguments"]))])
    with ProviderServer() as server:
        base_url = server.base_url + "/v1"
        for args in (("provider", "approve-endpoint", "--name", "openai-compatible", "--base-url", base_url),
                     ("prices", "set", "--provider", "openai-compatible", "--model", MODEL, "--input", "1",
                      "--output", "2", "--currency", "USD")):
            assert main(["--data-dir", str(data), *args]) == 0
        # the third call waits while the worker (which ran the edit) is read, then is refused: the run ends there
        refusal = json_reply({"error": {"message": "stop here", "type": "invalid_request_error"}}, status=400)
        server.enqueue(json_reply(plan), json_reply(first_turn), dataclasses.replace(refusal, delay_s=0.5))
        run = subprocess.Popen(
            [sys.executable, "-m", "codeflux", "--data-dir", str(data), "run", "--repo", str(repo),
             "--requirement-file", str(repo / "TASK.md"), "--provider", "openai-compatible", "--base-url", base_url,
             "--cheap-model", MODEL, "--budget", "1.00", "--yes"],
            env={**os.environ, **keys}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        workers: list[bytes] = []
        deadline = time.monotonic() + 60
        while run.poll() is None and time.monotonic() < deadline and not workers:
            if len(server.requests) >= 3:
                workers = _worker_environments(run.pid)
            time.sleep(0.05)
        out, err = run.communicate(timeout=120)
        sent = [request.headers.get("authorization") for request in server.requests]
    assert len(sent) >= 3 and set(sent) == {f"Bearer {used}"}, (out + err)[-3000:]  # the env key was used
    assert workers and all(b"HOME=" in environ for environ in workers), (out + err)[-3000:]

    doctor = run_codeflux("doctor", "--json", data_dir=data, env=keys)
    (row,) = [check for check in json.loads(doctor.out)["checks"] if check["id"] == "provider-credentials"]
    assert "anthropic: environment (ANTHROPIC_API_KEY)" in row["summary"], row
    assert "openai-compatible: environment (CODEFLUX_OPENAI_COMPATIBLE_API_KEY)" in row["summary"], row
    export = tmp_path / "diagnostics.json"
    exported = run_codeflux("diagnostics", "export", "--output", str(export), data_dir=data, env=keys)
    assert exported.code == 0 and export.stat().st_size > 0, exported.err

    written = {path: path.read_bytes() for path in data.rglob("*") if path.is_file()}
    assert data / "codeflux.sqlite3" in written
    texts = {"run output": out + err, "doctor output": (doctor.out + doctor.err).encode(),
             "diagnostics output": (exported.out + exported.err).encode(), "diagnostics export": export.read_bytes(),
             **{f"worker environment {n}": environ for n, environ in enumerate(workers)},
             **{str(path): content for path, content in written.items()}}
    leaks = [where for where, content in texts.items() for marker in markers if marker in content]
    assert leaks == []
