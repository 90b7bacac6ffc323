"""The authority classes (capabilities) a tool request can need, and a need narrowed to a resource.

A request may need several capabilities: ``sh -c "curl https://x | sh"`` needs ``process``, ``network``
and more. Approvals bind to an exact operation identity (``operations.py``); denials bind to a
capability, optionally narrowed to a resource such as a network host (``network:example.com``), so that
a denied thing cannot come back through another tool, a wrapper or another working directory.

Only ``read`` and ``task-write`` are automatic (inside an active task's worktree); every other
capability stops and asks a person.

Severity orders the capabilities from harmless to most dangerous; it decides the order in which needs
are shown and which need a classification calls its most severe. It is a presentation and comparison
order, not a lattice: needing ``privileged`` does not imply that ``network`` was considered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import total_ordering
from types import MappingProxyType
from typing import Final, Self, assert_never

from codeflux.domain.errors import InvalidValueError

__all__ = [
    "Capability",
    "CapabilityNeed",
    "capability_severity",
    "describe_denial",
    "is_automatic_capability",
]

_RESOURCE = re.compile(r"[\x21-\x7e]{1,255}")


class Capability(StrEnum):
    """An authority class. Stored values are kebab-case and part of the database contract.

    Members are declared from least to most severe (see :func:`capability_severity`).
    """

    READ = "read"
    TASK_WRITE = "task-write"
    PROCESS = "process"
    NETWORK = "network"
    INSTALL = "install"
    OUTSIDE_WRITE = "outside-write"
    EXTERNAL_COMMUNICATION = "external-communication"
    CREDENTIAL = "credential"
    DESTRUCTIVE = "destructive"
    PRIVILEGED = "privileged"


_SEVERITY: Final[Mapping[Capability, int]] = MappingProxyType(
    {capability: rank for rank, capability in enumerate(Capability)}
)


def capability_severity(capability: Capability) -> int:
    """0 for the harmless ``read`` up to 9 for ``privileged``; higher means a person must look harder.

    The enum is declared in this order. ``credential`` ranks above ``external-communication`` because a
    leaked key outlives any message; ``destructive`` above both because lost work cannot be recalled;
    ``privileged`` (root, code that runs outside every fence) is last because it can do all the others.
    """
    return _SEVERITY[capability]


def is_automatic_capability(capability: Capability) -> bool:
    """True for the two capabilities that never ask a person: reads and writes inside the worktree."""
    match capability:
        case Capability.READ | Capability.TASK_WRITE:
            return True
        case (
            Capability.PROCESS
            | Capability.NETWORK
            | Capability.INSTALL
            | Capability.OUTSIDE_WRITE
            | Capability.EXTERNAL_COMMUNICATION
            | Capability.CREDENTIAL
            | Capability.DESTRUCTIVE
            | Capability.PRIVILEGED
        ):
            return False
        case _:
            assert_never(capability)


@total_ordering
@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityNeed:
    """One capability a request needs, optionally narrowed to a resource (a network host, lower-case).

    ``resource=None`` means "not narrowed": the need may touch any resource of that capability. A
    host-scoped denial must therefore treat an unscoped need as overlapping it (see :meth:`overlaps`);
    otherwise a command whose destination cannot be read from its argv would slip past the denial.

    Needs order by severity, then capability name, then unscoped before scoped, then resource.
    """

    capability: Capability
    resource: str | None = None

    def __post_init__(self) -> None:
        if self.resource is not None and _RESOURCE.fullmatch(self.resource) is None:
            raise InvalidValueError(
                kind="capability resource",
                reason="must be 1–255 printable ASCII characters without spaces",
            )

    @classmethod
    def parse(cls, text: str) -> Self:
        """``network`` or ``network:example.com`` back into a need; :class:`InvalidValueError` if not."""
        name, separator, resource = text.partition(":")
        try:
            capability = Capability(name)
        except ValueError:
            raise InvalidValueError(kind="capability", reason=f"{name[:40]!r} is not a capability") from None
        return cls(capability=capability, resource=resource if separator else None)

    def overlaps(self, other: CapabilityNeed) -> bool:
        """True when both name the same capability and their resources may be the same one.

        An unscoped side overlaps every resource; two scoped sides overlap only when equal.
        """
        if self.capability is not other.capability:
            return False
        return self.resource is None or other.resource is None or self.resource == other.resource

    def sort_key(self) -> tuple[int, str, int, str]:
        """The key needs sort by (see the class docstring)."""
        scoped = 0 if self.resource is None else 1
        return (capability_severity(self.capability), self.capability.value, scoped, self.resource or "")

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, CapabilityNeed):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    def __str__(self) -> str:
        if self.resource is None:
            return self.capability.value
        return f"{self.capability.value}:{self.resource}"


# What a denial of each capability blocks, in words: (unnarrowed, narrowed to {resource}).
_BLOCKED: Final[Mapping[Capability, tuple[str, str]]] = MappingProxyType({
    Capability.READ: ("reading files", "reading {resource}"),
    Capability.TASK_WRITE: ("writing in the task's worktree", "writing {resource}"),
    Capability.PROCESS: ("every program (any command the agent asks to run)", "running {resource}"),
    Capability.NETWORK: ("all network access", "network access to {resource}"),
    Capability.INSTALL: ("installing packages", "installing {resource}"),
    Capability.OUTSIDE_WRITE: ("writing outside the task's worktree", "writing to {resource}"),
    Capability.EXTERNAL_COMMUNICATION: ("sending anything to outside services", "sending anything to {resource}"),
    Capability.CREDENTIAL: ("using credentials", "using the credential {resource}"),
    Capability.DESTRUCTIVE: ("destructive operations (deleting or overwriting what cannot be recalled)",
                             "destructive operations on {resource}"),
    Capability.PRIVILEGED: ("privileged operations (sudo and the like)", "privileged operations on {resource}"),
})


def describe_denial(needs: tuple[CapabilityNeed, ...]) -> str:
    """What denying records, for a card shown before the click: ``blocks every program … for the rest of
    this task`` naming the recorded capabilities. A denial binds to the task and the capability (not the
    tool or the working directory), so every later request needing one of them is refused without asking.
    Empty when there is nothing to deny."""
    if not needs:
        return ""
    words = [
        _BLOCKED[need.capability][0] if need.resource is None
        else _BLOCKED[need.capability][1].format(resource=need.resource)
        for need in needs
    ]
    blocked = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    recorded = ", ".join(str(need) for need in needs)
    return (f"blocks {blocked} for the rest of this task: it records a denial of {recorded}, and every later "
            "request that needs it is refused without asking, whatever the tool or working directory")
