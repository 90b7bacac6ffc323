"""One run of a task: the runner, the implementation loop and its steps, the planner (with its read-only
tools and repository map), the tool driver (authority decisions + the worker link), the headless policy, the
ports the pipeline runs checks through, and the scheduler that runs tasks in threads for ``codeflux start``."""
