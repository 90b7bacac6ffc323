"""The coordinator's composition root as the services see it: one database, one data directory, the
model access chosen at start, and the background runs.

``codeflux start`` (the CLI) builds a :class:`CoordinatorApp` after migrating and running startup
recovery, and hands it to :func:`codeflux.services.methods.build_method_table`. Services never build
provider adapters themselves: :class:`ModelAccess` is implemented by the CLI (which owns the provider
flags) and injected here, so the gateway stays the only code path that talks to a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from codeflux.coordinator.spending.gateway import ModelGateway
from codeflux.store.database import Database
from codeflux.store.location import DataLocation

if TYPE_CHECKING:
    from codeflux.services.runs import BackgroundRuns

__all__ = ["SCRIPTED_DEMO_LABEL", "CoordinatorApp", "ModelAccess"]

# How the scripted provider is labelled wherever a person can see it in the UI.
SCRIPTED_DEMO_LABEL: Final = "scripted demo — not an AI model"


class ModelAccess(Protocol):
    """Which provider the coordinator's gateway uses; built by ``codeflux start`` from its flags."""

    @property
    def label(self) -> str:
        """What the UI shows for the provider (:data:`SCRIPTED_DEMO_LABEL` for the scripted one)."""
        ...

    @property
    def scripted(self) -> bool: ...

    def gateway(self, phases: Sequence[str]) -> ModelGateway:
        """A gateway for the given phases (``("plan",)`` drafts plans, ``("run",)`` runs a task)."""
        ...

    def use_scripted_demo(self) -> None:
        """Switch to the scripted provider with the demo's shipped script (the first-run demo button)."""
        ...


@dataclass(slots=True, kw_only=True)
class CoordinatorApp:
    """What every service implementation gets. ``runs`` is created by the services layer itself
    (:func:`codeflux.services.methods.build_method_table`); ``codeflux start`` calls ``runs.shutdown()``
    on SIGINT/SIGTERM."""

    db: Database
    location: DataLocation
    models: ModelAccess
    version: str
    # The background run manager; set by codeflux.services.methods.build_method_table when missing.
    runs: BackgroundRuns | None = None
    # The loopback port the coordinator serves on, once it is bound (doctor checks that one).
    port: int | None = None
