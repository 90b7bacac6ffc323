"""The needs gathered while one request is read, each with its reasons in the order they were found.

Every reader in this package adds to a :class:`Findings` and none removes; :meth:`Findings.freeze` turns
it into the public :class:`~codeflux.authority.classify.classification.Classification`. Also here: what
a request codeflux cannot read needs (:data:`UNKNOWABLE`) and how a reason quotes argument text
(:func:`shown`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from codeflux.authority.classify.classification import Classification
from codeflux.domain.authority import ClassifiedNeed
from codeflux.domain.capabilities import Capability, CapabilityNeed, is_automatic_capability
from codeflux.domain.tools import ToolName

_C = Capability
UNKNOWABLE: Final = tuple(c for c in Capability if not is_automatic_capability(c))
"""Every non-automatic capability: what an unreadable request needs, so that any denial blocks it."""
_SHOWN: Final = 60


@dataclass(slots=True)
class Findings:
    """Needs gathered so far, each with its reasons in discovery order (a private accumulator)."""

    reasons: dict[CapabilityNeed, list[str]] = field(default_factory=dict)
    compound: bool = False
    guesses: int = 0  # words read on a guess (inside programs codeflux does not know); their reader bounds it

    def add(self, capability: Capability, reason: str, resource: str | None = None) -> None:
        listed = self.reasons.setdefault(CapabilityNeed(capability=capability, resource=resource), [])
        if reason not in listed:
            listed.append(reason)

    def add_all(self, capabilities: Iterable[Capability], reason: str) -> None:
        for capability in capabilities:
            self.add(capability, reason)

    def unknowable(self, reason: str) -> None:
        self.add_all(UNKNOWABLE, reason)

    def network(self, reason: str, hosts: Iterable[str | None]) -> None:
        """``network`` once per host; unscoped when a host is unknown (None) or none was found."""
        listed = list(hosts)
        for host in listed or [None]:
            self.add(_C.NETWORK, reason, host)

    def freeze(self, tool: ToolName) -> Classification:
        needs = tuple(
            ClassifiedNeed(need=need, reason="; ".join(self.reasons[need])) for need in sorted(self.reasons)
        )
        return Classification(tool=tool, needs=needs, compound=self.compound)


def shown(text: str) -> str:
    """``text`` quoted for a reason, cut short when it is long."""
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…")
