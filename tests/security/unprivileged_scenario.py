"""The confinement probe of ``test_confinement.py``, run whole as an unprivileged user (not a test module).

``test_confinement_as_an_unprivileged_user`` runs ``python -m tests.security.unprivileged_scenario WORKDIR``
as a user it created, with an interpreter that user can run. This process plays the coordinator: it
hardens itself first (``PR_SET_DUMPABLE=0``, as ``codeflux`` does at start), then builds a real database,
a real repository with two task worktrees, a TCP listener and a Unix socket in the data directory, and
runs the probe through real workers in each mode. It prints one JSON object: mode → probe results.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from pathlib import Path

from codeflux.authority.decide import DecisionOutcome, UserDecision
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.domain.confinement import ConfinementMode
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from codeflux.worker.client.confinement import choose_confinement
from codeflux.worker.hardening import make_undumpable
from tests.fixtures.worktrees import two_running_tasks
from tests.security.test_confinement import PROBE


def main(workdir: Path) -> int:
    if not make_undumpable():
        raise SystemExit("PR_SET_DUMPABLE is unavailable")
    location = DataLocation(directory=workdir / "data")
    db = open_store(location, create=True, migrate=True)
    made = two_running_tasks(db, workdir / "git")
    first, second_worktree = made.first, made.second_worktree
    (made.worktree / "probe.py").write_text(PROBE)
    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=lambda: [listener.accept()[0].close() for _ in iter(int, 1)], daemon=True).start()
    coordinator_socket = socket.socket(socket.AF_UNIX)
    coordinator_socket.bind(str(location.directory / "c.sock"))
    coordinator_socket.listen(8)
    home = Path(os.environ["HOME"])
    targets = {
        "port": listener.getsockname()[1], "pid": os.getpid(), "database": str(location.database),
        "wal": f"{location.database}-wal", "socket": str(location.directory / "c.sock"),
        "home": str(home / "planted.txt"), "other_worktree": str(second_worktree / "planted.txt"),
        "hook": str(made.repository / ".git" / "hooks" / "post-checkout"),
        "git_config": str(made.repository / ".git" / "config"),
    }
    results: dict[str, dict[str, object]] = {}
    for mode in ConfinementMode:
        with ToolDriver(db, state_dir=location.directory / "workers" / mode.value, data_dir=location.directory,
                        confinement=choose_confinement(mode.value)) as driver:
            request = driver.submit_tool_request(first, "run_command",
                                                 {"argv": [sys.executable, "probe.py", json.dumps(targets)]},
                                                 idempotency_key=f"probe-{mode}", source="test")
            if request.outcome is DecisionOutcome.PENDING:
                driver.decide(request.request_id, UserDecision.ALLOW_ONCE, reason="the scenario allows it")
            outcome = driver.execute(request.request_id)
            results[mode.value] = {"state": outcome.state, "confinement": outcome.confinement,
                                   "probe": json.loads(outcome.stdout or "{}"), "stderr": (outcome.stderr or "")[-400:]}
        for planted in (home / "planted.txt", second_worktree / "planted.txt",
                        made.repository / ".git" / "hooks" / "post-checkout"):
            planted.unlink(missing_ok=True)
    db.close()
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
