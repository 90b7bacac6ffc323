"""How an uncommitted path differs from HEAD: the vocabulary git inspection reports and a dirty-tree
acknowledgement records (stored in ``dirty_acknowledgements.changes_json``)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["ChangeStatus"]


class ChangeStatus(StrEnum):
    """How one path differs from HEAD, as the user would describe it (index and working tree together)."""

    ADDED = "added"  # staged as new
    MODIFIED = "modified"  # staged or not
    DELETED = "deleted"  # gone from the working tree (staged or not)
    TYPE_CHANGED = "type-changed"  # file ↔ symlink (↔ submodule)
    UNTRACKED = "untracked"  # not in the index and not ignored; a nested repository is one 'dir/' entry
    CONFLICTED = "conflicted"  # an unresolved merge conflict
