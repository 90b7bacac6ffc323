"""One task's life: the task service (states, plans, attempts, the stage ledger), its worktree, its
checkpoints, review (accept / reject), the pause and checkpoint of a shutdown, recovery after a crash, and the
person's approvals of a repository's instruction files (what the planner and the loop may show the model).
Nothing here talks to a model or a worker."""
