"""What every adapter shares: the one-method port, key loading at call time, and strict reply parsing.

Provider replies are untrusted bytes. They become pydantic models with strict types (a token count
must be a JSON integer: ``12.0`` or ``"12"`` is a malformed reply, not a number to coerce), then
domain values at once. Unknown fields are *ignored*, not forbidden: providers add reply fields often,
and a new field must not turn every call into an error. A validation failure is reported by location
only, never with the offending value (it could echo prompt text or a key).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from codeflux.credentials import Secret
from codeflux.domain.errors import ProviderReplyInvalidError
from codeflux.domain.models import ModelReply, ModelRequest
from codeflux.domain.providers import ProviderName
from codeflux.redact import Redactor

__all__ = ["KeyLoader", "ModelAdapter", "StrictReply", "TextSink", "load_key_for_call", "parse_reply"]

TextSink = Callable[[str], None]
"""Receives streamed text as it arrives (unredacted model output; the gateway redacts before display)."""

KeyLoader = Callable[[ProviderName], Secret]
"""Fetches a provider key; :func:`codeflux.credentials.load_provider_key` in production."""

M = TypeVar("M", bound=BaseModel)


class ModelAdapter(Protocol):
    """A model provider behind one method. Only the model gateway calls :meth:`complete`.

    ``complete`` sends ``request`` and returns the whole reply; when ``on_text`` is given the reply is
    streamed and each text fragment is passed to it as it arrives. Failures are
    :class:`~codeflux.domain.errors.ProviderError` subclasses whose ``may_have_been_processed`` says
    whether the call may have been billed.
    """

    @property
    def display_name(self) -> str:
        """The provider's name as a user sees it (``scripted (not a model)`` for the scripted one)."""
        ...

    def complete(self, request: ModelRequest, *, on_text: TextSink | None = None) -> ModelReply: ...


def load_key_for_call(provider: ProviderName, *, loader: KeyLoader, redactor: Redactor) -> Secret:
    """The provider's key from ``loader`` (which may hold it for the run: :mod:`codeflux.credentials.held`),
    registered with ``redactor``."""
    key = loader(provider)
    redactor.add_secret(key.reveal())
    return key


class StrictReply(BaseModel):
    """Base of every reply model: strict types, unknown fields ignored, immutable."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


def parse_reply(model: type[M], data: bytes | str, *, provider: str, what: str) -> M:
    """``data`` as ``model``, or :class:`ProviderReplyInvalidError` naming where it did not fit."""
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise ProviderReplyInvalidError(
            provider=provider,
            problem="malformed",
            detail=f"{what} does not match the provider's format at {where} ({first['type']})",
            may_have_been_processed=True,
        ) from None
