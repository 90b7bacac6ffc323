"""The recorded vocabulary of model calls: where a model request stands, and why one did not succeed.

Stored as ``model_requests.state`` and ``model_requests.error_kind``; the gateway writes them, the store
hands its rows upward as these types.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ModelCallErrorKind", "ModelRequestState"]


class ModelRequestState(StrEnum):
    """A model request moves forward only: ``planned → in-flight | failed``; ``in-flight → succeeded |
    failed | outcome-unknown``."""

    PLANNED = "planned"
    IN_FLIGHT = "in-flight"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    OUTCOME_UNKNOWN = "outcome-unknown"

    def is_finished(self) -> bool:
        """True once the request has ended (any state but ``planned`` and ``in-flight``)."""
        return self not in (ModelRequestState.PLANNED, ModelRequestState.IN_FLIGHT)


class ModelCallErrorKind(StrEnum):
    """Why a model request did not succeed; stable values code may branch on."""

    REJECTED = "rejected"  # the provider refused the request (4xx)
    UNAVAILABLE = "unavailable"  # unreachable, rate limited or failing after retries
    REPLY_INVALID = "reply-invalid"
    SCRIPT_EXHAUSTED = "script-exhausted"  # the scripted provider (not a model) had no turn left
    PROVIDER_ERROR = "provider-error"  # another provider error
    CREDENTIAL_UNAVAILABLE = "credential-unavailable"  # the key could not be fetched; nothing was sent
    OUTCOME_UNKNOWN = "outcome-unknown"  # no complete reply came; it may have been processed
    INTERNAL_ERROR = "internal-error"
    INTERRUPTED = "interrupted"  # codeflux stopped while the call was in flight
    INTERRUPTED_BEFORE_SENDING = "interrupted-before-sending"  # codeflux stopped before the call was sent
