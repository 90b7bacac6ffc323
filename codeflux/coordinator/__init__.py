"""The coordinator: everything that decides and records, in three wings plus start-up helpers.

- :mod:`codeflux.coordinator.tasks` — one task's life: the task service (states, plans, attempts, the
  stage ledger), its worktree, checkpoints, review (accept / reject) and recovery after a crash.
- :mod:`codeflux.coordinator.runs` — one run of a task: the runner, the implementation loop and its
  steps, the planner, the tool driver (authority + the worker link), the headless policy, the pipeline's
  ports and the scheduler (background runs for ``codeflux start``).
- :mod:`codeflux.coordinator.spending` — money: the model gateway (the only code path that calls a model),
  which provider it uses (``model_access``), budgets, prices and model approvals.

Beside them: ``hooks`` (the named hook points — tool call submitted, decided, ran; task state changed — that
the CLI and services observe instead of subclassing coordinator classes) with ``tool_calls`` (the values
their notifications carry), ``journal`` (reading a session's
events), ``maintenance`` (backup, integrity check, inspection, storage diagnostics, migrations, the application
log, provider key references — what the maintenance commands ask of the store), ``doctor`` (prerequisite
checks), ``instance`` (one coordinator per data directory) and ``demo`` (the sample repository). The
coordinator's side of the worker link lives in :mod:`codeflux.worker.client`.

Floors, lowest first (``tests/unit/test_import_boundaries.py``): the top-level modules lean on no wing;
``spending`` on none; ``tasks`` on ``spending``; ``runs`` on ``tasks`` and ``spending``. Below them: domain,
store, authority, gitwork, pipeline, providers, redact, credentials, worker — never services, server or cli.
"""
