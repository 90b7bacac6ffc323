"""The coordinator's side of the pipeline's memory port: verified atoms of the person's checkout (stage 6 recall), and
the tests covering a task's changed files (phase B's coverage run).

:class:`CheckoutMemory` asks :func:`codeflux.memory.recall.recall` for ``atom`` entries matching a name, judged in
the checkout the task started from (``repository_root``: where the atoms were learned after an accept, with the
same toolchain probe), and hands each back as a :class:`~codeflux.pipeline.ports.RecalledAtom`: usable ones with
their body, refused ones with the verdict's reason (a refused candidate carries no body; its name and contract hash
are read back from its text, which :func:`~codeflux.memory.learn.learn_atom` writes as ``atom NAME contract HASH``).
:meth:`CheckoutMemory.covering_tests` judges ``file-test-map`` entries at the task's base revision
(:func:`~codeflux.memory.recall.covering_tests_at_base`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from codeflux.domain.covering_tests import ChangedFile, CoveringTests
from codeflux.domain.memory import MemoryKind
from codeflux.memory.recall import RecallContext, covering_tests_at_base, recall
from codeflux.pipeline.ports import RecalledAtom
from codeflux.store.database import Database

__all__ = ["CheckoutMemory"]

_TEXT: Final = re.compile(r"^atom (?P<name>\S+) contract (?P<hash>[0-9a-f]{64})$")
_LIMIT: Final = 20


class CheckoutMemory:
    """A :class:`~codeflux.pipeline.ports.MemoryPort` over the coordinator's database and one checkout."""

    def __init__(self, db: Database, root: Path) -> None:
        self._db = db
        self._root = root

    def recall_atoms(self, name: str) -> tuple[RecalledAtom, ...]:
        found = recall(self._db, name, RecallContext(root=self._root, kind=MemoryKind.ATOM, limit=_LIMIT))
        atoms = [RecalledAtom(entry_id=item.entry.entry_id.value, qualified_name=str(item.entry.body.get("name", "")),
                              path=str(item.entry.body.get("path", "")),
                              contract_hash=str(item.entry.body.get("contract_hash", "")),
                              learned_at_commit=item.entry.learned_at_commit, usable=True, reason="applicable now")
                 for item in found.usable]
        for refused in found.refused:
            text = _TEXT.match(refused.text)
            atoms.append(RecalledAtom(entry_id=refused.entry_id.value, qualified_name="" if text is None else
                                      text["name"], path="", contract_hash="" if text is None else text["hash"],
                                      learned_at_commit="", usable=False,
                                      reason=f"{refused.verdict.reason}: {refused.verdict.detail}"))
        return tuple(atoms)

    def covering_tests(self, changed: Sequence[ChangedFile], base_commit: str) -> CoveringTests:
        return covering_tests_at_base(self._db, self._root, changed, base_commit=base_commit)
