"""The public result of classification: what the resolver found, each need with its reason, the whole.

These are the values callers hold on to (approvals, denials and the journal read them); everything that
produces them lives in the sibling modules and is private to the package.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeflux.domain.authority import ClassifiedNeed
from codeflux.domain.capabilities import Capability, CapabilityNeed, is_automatic_capability
from codeflux.domain.tools import ToolName


@dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeFacts:
    """What the path resolver found out about the request's paths (classification does no I/O).

    ``escaping_paths`` holds path arguments, exactly as written in the request, that resolve outside
    the task worktree (through a symlink, for example).
    """

    escaping_paths: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class Classification:
    """The sorted needs of one request (each with its reason) and whether it was a compound string.

    ``compound`` is true when a shell string held several commands, redirections or substitutions: the
    whole string is one operation and no narrower approval can cover it.
    """

    tool: ToolName
    needs: tuple[ClassifiedNeed, ...]
    compound: bool

    def need_set(self) -> frozenset[CapabilityNeed]:
        return frozenset(item.need for item in self.needs)

    def capabilities(self) -> frozenset[Capability]:
        return frozenset(item.need.capability for item in self.needs)

    def most_severe(self) -> Capability:
        """The most severe capability needed (needs are sorted, so it is the last one)."""
        return self.needs[-1].need.capability

    def is_automatic(self) -> bool:
        """True when every need is automatic (``read`` / ``task-write``)."""
        return all(is_automatic_capability(item.need.capability) for item in self.needs)

    def reason_for(self, need: CapabilityNeed) -> str | None:
        for item in self.needs:
            if item.need == need:
                return item.reason
        return None
