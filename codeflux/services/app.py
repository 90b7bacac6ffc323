"""The coordinator's composition root as the services see it: one database, one data directory, the
model access chosen at start, and the background runs.

``codeflux start`` (the CLI) builds a :class:`CoordinatorApp` after migrating and running startup
recovery, and hands it to :func:`codeflux.services.methods.build_method_table`. Services never build
provider adapters themselves: :class:`~codeflux.coordinator.spending.model_access.ModelAccess` is
implemented by the CLI (which owns the provider flags) and injected here, so the gateway stays the only
code path that talks to a model. The scheduler (:class:`~codeflux.coordinator.runs.scheduler.BackgroundRuns`)
is the coordinator's; the app only holds it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from codeflux.coordinator.runs.scheduler import BackgroundRuns
from codeflux.coordinator.spending.model_access import ModelAccess
from codeflux.coordinator.tasks.gates import MAX_ACTIVE_TASKS
from codeflux.store.database import Database
from codeflux.store.location import DataLocation

__all__ = ["SCRIPTED_DEMO_LABEL", "CoordinatorApp", "LaunchLink", "ModelAccess"]

# How the scripted provider is labelled wherever a person can see it in the UI.
SCRIPTED_DEMO_LABEL: Final = "scripted demo — not an AI model"


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchLink:
    """A fresh one-time launch link: ``url`` carries the token; ``origin`` is the UI's origin without one."""

    url: str = field(repr=False)
    origin: str
    valid_seconds: int


@dataclass(slots=True, kw_only=True)
class CoordinatorApp:
    """What every service implementation gets. ``runs`` (the coordinator's scheduler) is built with the app, over
    the same database, data directory and model access; nothing else completes the app later.
    ``codeflux start`` calls ``runs.shutdown()`` on SIGINT/SIGTERM (:func:`codeflux.services.methods.shutdown_runs`)."""

    db: Database
    location: DataLocation
    models: ModelAccess
    version: str
    # The background runs: the coordinator's scheduler (built in __post_init__; it starts nothing by itself).
    runs: BackgroundRuns = field(init=False)
    # The loopback port the coordinator serves on, once it is bound (doctor checks that one).
    port: int | None = None
    # Asked before each model call of a plan draft: a signal's name stops the draft at that boundary (the
    # terminal's in-process channel sets it; the coordinator stops through BackgroundRuns.shutdown).
    stop_requested: Callable[[], str | None] = lambda: None
    # Issues a fresh one-time launch link (URL, UI origin, seconds it stays valid) for the browser UI this
    # coordinator serves: set by the server once it listens (``codeflux open`` asks for one over the socket).
    launch_link: Callable[[], LaunchLink] | None = None
    # The plan drafts ``codeflux watch --auto-plan`` ticks make at once (IncidentService/WatchTick): a burst of
    # incidents from several watches never has more planning calls in flight than the active-task limit.
    planning_slots: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(MAX_ACTIVE_TASKS))

    def __post_init__(self) -> None:
        self.runs = BackgroundRuns(self.db, self.location, lambda: self.models)
