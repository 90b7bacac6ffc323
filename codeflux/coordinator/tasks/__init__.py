"""One task's life: the task service (states, plans, attempts, the stage ledger), its worktree, its
checkpoints, review (accept / reject) and recovery after a crash. Nothing here talks to a model or a worker."""
