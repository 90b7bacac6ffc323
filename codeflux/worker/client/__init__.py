"""The coordinator's side of the worker link: start a worker in its box (``launch``, ``confinement``), run
authorized requests on its long-lived streams (``handle``, ``streams``), and what crosses the boundary
(``wire``). Imported by the coordinator; never imported by the worker process itself."""
