"""One run of a task: the runner, the implementation loop and its steps, the planner, the tool driver
(authority decisions + the worker link), the headless policy and the ports the pipeline runs checks through."""
