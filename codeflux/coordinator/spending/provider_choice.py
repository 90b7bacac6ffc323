"""The provider new tasks use when ``codeflux start`` was given no ``--provider`` flag (Settings → Providers).

Stored as the setting ``provider.choice`` (``{"provider": "anthropic", "cheap_model": "…", "capable_model": "…"}``,
and for ``openai-compatible`` its ``base_url`` and ``no_key``) by compare-and-set; nothing else about a provider is
stored here (its key stays in the OS credential store). One precedence table, shared with the real-use issue: a
``start`` flag wins over the choice stored here, which wins over the config file's ``[provider]``, which wins over
the built-in default (the scripted provider — not an AI model).

A task pins the choice in force when it was created (:class:`PinnedChoice`, the table ``task_provider_pins`` of
migration 000018, written in the task's creation transaction): its plan drafts and every run use the pin, whatever
is chosen since. A task created before 000018 has no pin and keeps the old behaviour (the choice in force when each
plan draft or run starts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.providers import ChoiceSource, ProviderName
from codeflux.providers.endpoints import normalize_base_url
from codeflux.store.database import Database, Transaction, now_us
from codeflux.store.model_requests import latest_provider_of_task
from codeflux.store.provider_pins import ProviderPinRow, insert_provider_pin, read_provider_pin
from codeflux.store.settings import put_setting, read_setting

__all__ = ["SCRIPTED_PROVIDER", "ChoiceSource", "PinnedChoice", "ProviderChoice", "StoredProviderChoice",
           "pin_task_choice", "provider_used_by_task", "read_provider_choice", "read_task_pin", "set_provider_choice"]

_KEY: Final = "provider.choice"
SCRIPTED_PROVIDER: Final = "scripted"
_MODEL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderChoice:
    """A provider and, for a real one, the ladder's cheap and capable models (capable defaults to cheap) and the
    base URL it is called at — required for ``openai-compatible``; for ``anthropic``/``openai`` a ``--base-url``
    flag's endpoint (a proxy), empty for the provider's default — normalized
    (:func:`codeflux.providers.endpoints.normalize_base_url`, so an http URL names a loopback host, and a non-default
    endpoint still needs its approval before a call); and whether an ``openai-compatible`` server takes no key
    (``uses_key=False``)."""

    provider: str
    cheap_model: str = ""
    capable_model: str = ""
    base_url: str = ""
    uses_key: bool = True

    def __post_init__(self) -> None:
        if self.provider != SCRIPTED_PROVIDER:
            name = ProviderName.parse(self.provider)
            if not self.cheap_model:
                raise InvalidValueError(kind="provider choice", reason=f"{self.provider} needs a model")
        elif self.cheap_model or self.capable_model:
            raise InvalidValueError(kind="provider choice", reason="the scripted provider takes no model")
        compatible = self.provider == ProviderName.OPENAI_COMPATIBLE.value
        if compatible and not self.base_url:
            raise InvalidValueError(kind="provider choice", reason="openai-compatible needs a base URL")
        if self.base_url and (self.scripted or normalize_base_url(name, self.base_url) != self.base_url):
            # refused with its reason, else normalized; the scripted provider calls no endpoint
            raise InvalidValueError(kind="provider choice", reason="the base URL is not in its normalized form")
        if not self.uses_key and not compatible:
            raise InvalidValueError(kind="provider choice",
                                    reason="\"no key\" is for the openai-compatible provider only")
        for model in (self.cheap_model, self.capable_model):
            if model and not _MODEL.fullmatch(model):
                raise InvalidValueError(kind="model name", reason="letters, digits and . _ : / @ - only (≤ 128)")

    @property
    def scripted(self) -> bool:
        return self.provider == SCRIPTED_PROVIDER

    @property
    def capable(self) -> str:
        return self.capable_model or self.cheap_model

    @classmethod
    def normalized(cls, *, provider: str, cheap_model: str = "", capable_model: str = "", base_url: str = "",
                   uses_key: bool = True) -> ProviderChoice:
        """The choice with its base URL normalized (:class:`EndpointRefusedError` says why one is refused)."""
        if base_url and provider != SCRIPTED_PROVIDER:
            base_url = normalize_base_url(ProviderName.parse(provider), base_url)
        return cls(provider=provider, cheap_model=cheap_model, capable_model=capable_model, base_url=base_url,
                   uses_key=uses_key)

    @property
    def label(self) -> str:
        """How a person reads the choice: the provider and its model, and the endpoint when it is not the default."""
        if self.scripted:
            return SCRIPTED_PROVIDER
        shown = f"{self.provider} ({self.cheap_model})"
        return f"{shown} at {self.base_url}" if self.base_url else shown


@dataclass(frozen=True, slots=True, kw_only=True)
class PinnedChoice:
    """The provider choice a task was created with, and why that choice was in force (:class:`ChoiceSource`)."""

    choice: ProviderChoice
    source: ChoiceSource


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredProviderChoice:
    choice: ProviderChoice | None  # None: never chosen
    revision: int | None


def read_provider_choice(db: Database) -> StoredProviderChoice:
    row = db.read(lambda view: read_setting(view, _KEY))
    if row is None:
        return StoredProviderChoice(choice=None, revision=None)
    value = dict(row.value)
    choice = ProviderChoice(provider=str(value.get("provider", "")), cheap_model=str(value.get("cheap_model", "")),
                            capable_model=str(value.get("capable_model", "")), base_url=str(value.get("base_url", "")),
                            uses_key=not bool(value.get("no_key", False)))  # keys absent before base URLs were stored
    return StoredProviderChoice(choice=choice, revision=row.revision)


def set_provider_choice(db: Database, choice: ProviderChoice, *, expected_revision: int | None) -> StoredProviderChoice:
    """Store ``choice``; ``expected_revision`` is the revision read (None: never chosen)."""

    def work(tx: Transaction) -> int:
        return put_setting(tx, _KEY, {"provider": choice.provider, "cheap_model": choice.cheap_model,
                                      "capable_model": choice.capable_model, "base_url": choice.base_url,
                                      "no_key": not choice.uses_key}, expected_revision=expected_revision)

    return StoredProviderChoice(choice=choice, revision=db.write(work))


def provider_used_by_task(db: Database, task_id: TaskId) -> tuple[str, str] | None:
    """The provider and model the task's newest model call went to (recorded by the gateway), or None before its
    first call: a task shows the provider it used, not one chosen since."""
    return db.read(lambda view: latest_provider_of_task(view, task_id))


def pin_task_choice(tx: Transaction, task_id: TaskId, pin: PinnedChoice, *, at_us: int | None = None) -> None:
    """Record ``pin`` for the task, in the transaction that creates it (the pin never changes afterwards)."""
    choice = pin.choice
    insert_provider_pin(tx, ProviderPinRow(
        task_id=task_id.value, provider=choice.provider, cheap_model=choice.cheap_model,
        capable_model=choice.capable_model, base_url=choice.base_url, uses_key=choice.uses_key,
        source=pin.source, pinned_at_us=now_us() if at_us is None else at_us))


def read_task_pin(db: Database, task_id: TaskId) -> PinnedChoice | None:
    """The choice the task was created with, or None for a task created before pins were recorded (000018): such a
    task uses the choice in force when each plan draft or run starts, as it always did."""
    row = db.read(lambda view: read_provider_pin(view, task_id.value))
    if row is None:
        return None
    return PinnedChoice(choice=ProviderChoice(provider=row.provider, cheap_model=row.cheap_model,
                                              capable_model=row.capable_model, base_url=row.base_url,
                                              uses_key=row.uses_key), source=row.source)
