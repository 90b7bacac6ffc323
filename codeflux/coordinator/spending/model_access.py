"""Which provider the coordinator's gateway uses: :class:`ModelAccess`, implemented by ``codeflux start``
(which owns the provider flags) and handed to the scheduler and the services, so nothing below the CLI builds
a provider adapter and the gateway stays the only code path that talks to a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from codeflux.coordinator.spending.gateway import ModelGateway

__all__ = ["ExplainedModelAccess", "ModelAccess"]


class ModelAccess(Protocol):
    """The provider behind the coordinator's gateway, chosen at start (the first-run demo may switch it)."""

    @property
    def label(self) -> str:
        """What the UI shows for the provider (the scripted one says it is not a model)."""
        ...

    @property
    def scripted(self) -> bool: ...

    def gateway(self, phases: Sequence[str]) -> ModelGateway:
        """A gateway for the given phases (``("plan",)`` drafts plans, ``("run",)`` runs a task)."""
        ...

    def use_scripted_demo(self) -> None:
        """Switch to the scripted provider with the demo's shipped script (the first-run demo button)."""
        ...


@runtime_checkable
class ExplainedModelAccess(ModelAccess, Protocol):
    """A model access that can say why it uses its provider (``codeflux start``'s: a flag, the demo, the choice
    stored in Settings → Providers, or the built-in default — :class:`~codeflux.coordinator.spending.
    provider_choice.ChoiceSource`); read at each gateway build, so a choice applies to work started afterwards."""

    @property
    def source(self) -> str: ...
