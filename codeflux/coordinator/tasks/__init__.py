"""One task's life: the task service (states, plans, attempts, the stage ledger), its worktree, its
checkpoints, review (accept / reject), the pause and checkpoint of a shutdown, and recovery after a crash.
Nothing here talks to a model or a worker."""
