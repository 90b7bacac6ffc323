"""Read before write: the sha256 of each file as this conversation last showed it to the model.

A successful ``read_file`` shows the file's sha256, and a successful ``write_file`` or ``edit_file`` shows
the sha256 of what it wrote (:func:`~codeflux.coordinator.runs.loop_steps.describe_execution`). The loop
keeps the last one per path; a ``write_file`` the model sends **without** ``expected_sha256`` gets that
sha256 filled in before it is submitted — so it is part of the request the authority records and the
operation identity, exactly as if the model had sent it. The worker then replaces the file only if its
content is still what was shown (else ``content-mismatch``: "changed since it was read; read it again"),
and a file never shown gets no hash, so the worker refuses to overwrite it (``already-exists``: "read it
first"). A patch or a deletion forgets its paths (their new content was never shown), and so does a
write whose outcome is unknown; a failed tool changed nothing, so it changes nothing here.

The map is rebuilt from the stored conversation when a run continues it (the tool calls and the results
the model was shown), so a resumed run — and a replayed turn, whose calls must be submitted with exactly
the arguments they had — fills in the same sha256.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from codeflux.coordinator.runs.loop_steps import SHOWN_SHA256_LABEL, clean_path, paths_written
from codeflux.coordinator.tool_calls import ExecutionRecord
from codeflux.domain.errors import ToolRequestInvalidError
from codeflux.domain.execution import ToolExecutionState
from codeflux.domain.models import Message, ToolCall, ToolResult
from codeflux.domain.tools import ToolName

__all__ = ["ShownFiles"]

_SHOWN: Final = re.compile(rf"^{re.escape(SHOWN_SHA256_LABEL)}([0-9a-f]{{64}})$", flags=re.MULTILINE)
_STATE: Final = re.compile(r"state: ([a-z-]+)\n?")
_SHOWING: Final = frozenset({ToolName.READ_FILE.value, ToolName.WRITE_FILE.value, ToolName.EDIT_FILE.value})
_FORGETTING: Final = frozenset({ToolName.APPLY_PATCH.value, ToolName.DELETE_FILE.value})


class ShownFiles:
    """The sha256 last shown for each worktree path in one conversation (see the module docstring)."""

    def __init__(self) -> None:
        self._shown: dict[str, str] = {}

    def fill(self, tool: str, arguments: Mapping[str, object]) -> dict[str, object]:
        """``arguments`` with ``expected_sha256`` filled in for a ``write_file`` of a file shown before."""
        filled = dict(arguments)
        path = arguments.get("path")
        if tool == ToolName.WRITE_FILE.value and arguments.get("expected_sha256") is None and isinstance(path, str):
            shown = self._shown.get(clean_path(path))
            if shown is not None:
                filled["expected_sha256"] = shown
        return filled

    def note(self, tool: str, arguments: Mapping[str, object], record: ExecutionRecord) -> None:
        """Remember what a finished tool call showed (or forget what it may have changed unseen)."""
        self._note(tool, arguments, record.content_sha256, state=str(record.state))

    def restore(self, messages: Iterable[Message]) -> None:
        """Replay a stored conversation: each tool call with the result text the model was shown."""
        calls: dict[str, ToolCall] = {}
        for message in messages:
            for part in message.parts:
                if isinstance(part, ToolCall):
                    calls[part.call_id] = part
                elif isinstance(part, ToolResult) and part.call_id in calls:
                    call = calls[part.call_id]
                    try:
                        arguments = call.arguments()
                    except ToolRequestInvalidError:
                        continue
                    state = _STATE.match(part.content)
                    if state is None:
                        continue  # refused before it ran: nothing was shown or changed
                    shown = _SHOWN.search(part.content)
                    self._note(call.name, arguments, shown.group(1) if shown else None, state=state.group(1))

    def _note(self, tool: str, arguments: Mapping[str, object], sha256: str | None, *, state: str) -> None:
        path = arguments.get("path")
        if state == ToolExecutionState.FAILED.value:
            return  # a failed tool changed nothing (writes are atomic, patches all-or-nothing)
        if state != ToolExecutionState.SUCCEEDED.value:  # cancelled, or its outcome is unknown
            sha256 = None
        if tool in _SHOWING and isinstance(path, str):
            if sha256:
                self._shown[clean_path(path)] = sha256
            elif tool != ToolName.READ_FILE.value:
                self._shown.pop(clean_path(path), None)  # what the file holds now was not shown
        elif tool in _FORGETTING:
            for changed in paths_written(tool, arguments) | ({clean_path(path)} if isinstance(path, str) else set()):
                self._shown.pop(changed, None)

    def __len__(self) -> int:
        return len(self._shown)
