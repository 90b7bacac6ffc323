"""The provider new tasks use when ``codeflux start`` was given no ``--provider`` flag (Settings → Providers).

Stored as the setting ``provider.choice`` (``{"provider": "anthropic", "cheap_model": "…", "capable_model": "…"}``)
by compare-and-set; nothing else about a provider is stored here (its key stays in the OS credential store).
One precedence table, shared with the real-use issue: a ``start`` flag wins over the choice stored here, which
wins over the built-in default (the scripted provider — not an AI model). There is no config file yet; when it
lands it ranks between the stored choice and the built-in default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.providers import ProviderName
from codeflux.store.database import Database, Transaction
from codeflux.store.model_requests import latest_provider_of_task
from codeflux.store.settings import put_setting, read_setting

__all__ = ["SCRIPTED_PROVIDER", "ChoiceSource", "ProviderChoice", "StoredProviderChoice", "provider_used_by_task",
           "read_provider_choice", "set_provider_choice"]

_KEY: Final = "provider.choice"
SCRIPTED_PROVIDER: Final = "scripted"
_MODEL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}")


class ChoiceSource(StrEnum):
    """Why the coordinator uses the provider it uses (highest rank first)."""

    FLAG = "flag"  # `codeflux start --provider …`
    DEMO = "demo"  # `start --demo` or the first-run demo button: the scripted provider
    SETTINGS = "settings"  # the choice stored in Settings → Providers
    CONFIG = "config"  # the config file's [provider] (codeflux.domain.user_config), read when `start` began
    DEFAULT = "default"  # nothing chosen: the scripted provider (not an AI model)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderChoice:
    """A provider and, for a real one, the ladder's cheap and capable models (capable defaults to cheap)."""

    provider: str
    cheap_model: str = ""
    capable_model: str = ""

    def __post_init__(self) -> None:
        if self.provider != SCRIPTED_PROVIDER:
            ProviderName.parse(self.provider)
            if not self.cheap_model:
                raise InvalidValueError(kind="provider choice", reason=f"{self.provider} needs a model")
        elif self.cheap_model or self.capable_model:
            raise InvalidValueError(kind="provider choice", reason="the scripted provider takes no model")
        for model in (self.cheap_model, self.capable_model):
            if model and not _MODEL.fullmatch(model):
                raise InvalidValueError(kind="model name", reason="letters, digits and . _ : / @ - only (≤ 128)")

    @property
    def scripted(self) -> bool:
        return self.provider == SCRIPTED_PROVIDER

    @property
    def capable(self) -> str:
        return self.capable_model or self.cheap_model


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
                            capable_model=str(value.get("capable_model", "")))
    return StoredProviderChoice(choice=choice, revision=row.revision)


def set_provider_choice(db: Database, choice: ProviderChoice, *, expected_revision: int | None) -> StoredProviderChoice:
    """Store ``choice``; ``expected_revision`` is the revision read (None: never chosen)."""

    def work(tx: Transaction) -> int:
        return put_setting(tx, _KEY, {"provider": choice.provider, "cheap_model": choice.cheap_model,
                                      "capable_model": choice.capable_model}, expected_revision=expected_revision)

    return StoredProviderChoice(choice=choice, revision=db.write(work))


def provider_used_by_task(db: Database, task_id: TaskId) -> tuple[str, str] | None:
    """The provider and model the task's newest model call went to (recorded by the gateway), or None before its
    first call: a task shows the provider it used, not one chosen since."""
    return db.read(lambda view: latest_provider_of_task(view, task_id))
