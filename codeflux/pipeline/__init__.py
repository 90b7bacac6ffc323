"""The stage runner: one run attempt's real checks, in stage order, recorded in the stage ledger.

:func:`~codeflux.pipeline.runner.run_pipeline` evaluates the stages codeflux performs today and records
each verdict with its evidence; every other stage is filled by the ledger rules (``not-implemented``, or
``blocked`` after the stage where the run stopped). One module per phase holds the real checks:

* :mod:`.specification` — 1 instructions (acceptance examples from the requirement) and 3
  atomic-instructions (the approved plan's steps);
* :mod:`.program` — 26 assembly (the diff is non-empty, the worktree verifies, changed Python compiles)
  and 28 integration-tests (the repository's pytest with junit XML, run in the task's worker);
* :mod:`.delivery` — 35 evidence-bundle, 36 human-acceptance, 37 deliver.

May import: ``codeflux.domain``, ``codeflux.store`` and ``codeflux.gitwork`` (plus the standard
library). Everything else — the ledger writer, the command runner in the worker, the acceptance
record — arrives as the ports in :mod:`.ports`, handed in by the coordinator.
"""
