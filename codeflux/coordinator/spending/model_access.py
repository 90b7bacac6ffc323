"""Which provider the coordinator's gateway uses: :class:`ModelAccess`, implemented by ``codeflux start``
(which owns the provider flags) and handed to the scheduler and the services, so nothing below the CLI builds
a provider adapter and the gateway stays the only code path that talks to a model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from codeflux.coordinator.spending.gateway import ModelGateway
from codeflux.coordinator.spending.provider_choice import PinnedChoice, pin_task_choice, read_task_pin
from codeflux.domain.ids import TaskId
from codeflux.store.database import Database, Transaction
from codeflux.store.events import JournalEvent

__all__ = ["EndpointModelAccess", "ExplainedModelAccess", "ModelAccess", "PinningModelAccess", "TaskGateway",
           "gateway_for_task", "pin_new_task", "pinning"]


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


@runtime_checkable
class EndpointModelAccess(ModelAccess, Protocol):
    """A model access that can say which endpoint its provider in force now is called at (``codeflux start``'s):
    a task without a pin, and Settings, show the approval card for it while nobody approved it."""

    @property
    def endpoint(self) -> tuple[str, str] | None:
        """The provider in force now and the base URL its gateway calls (a flag's, the environment's, the config
        file's or the stored choice's), normalized; None: the scripted provider, the provider's default endpoint, or a
        URL the endpoint rules refuse (a gateway build refuses it with its reason)."""
        ...


@runtime_checkable
class PinningModelAccess(ModelAccess, Protocol):
    """A model access whose choice a new task pins (``codeflux start``'s): the task's plan drafts and runs then use
    the pinned choice, whatever is chosen (or flagged at a later ``start``) since."""

    def pin_for_new_task(self) -> PinnedChoice:
        """The choice in force now, with its source: what a task created now pins."""
        ...

    def pinned_gateway(self, pin: PinnedChoice, phases: Sequence[str]) -> ModelGateway:
        """A gateway over ``pin``'s provider for the given phases."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskGateway:
    gateway: ModelGateway
    scripted: bool
    pin: PinnedChoice | None  # None: the task has no pin (created before 000018) or the access pins nothing


def gateway_for_task(models: ModelAccess, db: Database, task_id: TaskId, phases: Sequence[str]) -> TaskGateway:
    """The gateway a plan draft or run of ``task_id`` uses: over the task's pinned choice when it has one and the
    access can honour it; else (a task created before pins, or an access that pins nothing) the choice in force now,
    as before."""
    pin = read_task_pin(db, task_id) if isinstance(models, PinningModelAccess) else None
    if pin is None or not isinstance(models, PinningModelAccess):
        return TaskGateway(gateway=models.gateway(phases), scripted=models.scripted, pin=None)
    return TaskGateway(gateway=models.pinned_gateway(pin, phases), scripted=pin.choice.scripted, pin=pin)


def pin_new_task(models: ModelAccess, also: Callable[[Transaction, TaskId], Sequence[JournalEvent]] | None = None,
                 ) -> Callable[[Transaction, TaskId], Sequence[JournalEvent]] | None:
    """The ``also`` of :meth:`TaskService.create_task` that pins the choice in force (with ``also``'s own work),
    so the task and its pin commit together; ``also`` itself when the access pins nothing."""
    if not isinstance(models, PinningModelAccess):
        return also
    return pinning(models.pin_for_new_task(), also)  # resolved before the transaction: it reads the stored choice


def pinning(pin: PinnedChoice, also: Callable[[Transaction, TaskId], Sequence[JournalEvent]] | None = None,
            ) -> Callable[[Transaction, TaskId], Sequence[JournalEvent]]:
    """The ``also`` of :meth:`TaskService.create_task` that records ``pin`` for the new task (then ``also``)."""

    def work(tx: Transaction, task_id: TaskId) -> Sequence[JournalEvent]:
        pin_task_choice(tx, task_id, pin)
        return [] if also is None else also(tx, task_id)

    return work
