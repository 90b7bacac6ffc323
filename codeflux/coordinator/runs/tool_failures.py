"""What a failed tool call is, for the stall count: its operation's target and its failure kind.

The loop fingerprints every failed tool call (:func:`tool_failure_fingerprint`) and records it on the
ladder; one fingerprint recurring ``stall_threshold`` times on a rung is a stall. The fingerprint is
:func:`~codeflux.domain.ladder.fingerprint_tool_failure` of

* the **target** (:func:`operation_target`): the canonical path of a file tool (with the pattern, for
  ``grep`` and ``glob``), the paths an ``apply_patch`` diff names, or the program and its first argument
  for ``run_command`` (``python -m``, ``pytest tests``);
* the **failure kind**: the execution's ``failure_kind`` (``not-found``, ``no-match``, ``nonzero-exit``…),
  or, for a request that never ran, the words before the first colon of what the model was told
  (``refused``, ``denied by user``);
* the **detail**: the execution's one-line message (for a command, the failing tests its output names,
  else the message and the end of its output), or the refusal's reason — every number masked.

So a miss on ``a.py``, then ``b.py``, then ``c.py`` is three fingerprints and never stalls, while the same
miss on ``a.py`` three times does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from codeflux.coordinator.runs.loop_steps import paths_written
from codeflux.coordinator.tool_calls import ExecutionRecord
from codeflux.domain.errors import ToolRequestInvalidError
from codeflux.domain.ladder import FailureFingerprint, failing_test_names, fingerprint_tool_failure
from codeflux.domain.models import ToolCall
from codeflux.domain.tools import ToolName, canonical_tool_path

__all__ = ["operation_target", "tool_failure_fingerprint"]

_TARGET_CHARS: Final = 300
_OUTPUT_TAIL_CHARS: Final = 600


def operation_target(tool: str, arguments: Mapping[str, object]) -> str:
    """What ``tool`` called with ``arguments`` acts on, in a few words (see the module docstring); ``""``
    for a tool without one (``git_status``)."""
    if tool == ToolName.RUN_COMMAND.value:
        argv = arguments.get("argv")
        words = [str(word) for word in argv[:2]] if isinstance(argv, list | tuple) else []
        return " ".join(words)[:_TARGET_CHARS]
    if tool == ToolName.APPLY_PATCH.value:
        return ", ".join(sorted(paths_written(tool, arguments)))[:_TARGET_CHARS]
    path = arguments.get("path")
    target = canonical_tool_path(path) if isinstance(path, str) else ""
    pattern = arguments.get("pattern")
    if isinstance(pattern, str):
        target = f"{target} {pattern}".strip()
    return target[:_TARGET_CHARS]


def tool_failure_fingerprint(call: ToolCall, text: str, record: ExecutionRecord | None = None) -> FailureFingerprint:
    """The fingerprint of ``call``'s failure: ``record`` is its execution when it ran, else ``text`` is what
    the model was told (a refusal or a denial)."""
    try:
        arguments: Mapping[str, object] = call.arguments()
    except ToolRequestInvalidError:
        arguments = {}
    target = operation_target(call.name, arguments)
    if record is None:
        kind, _, detail = text.partition(":")
        return fingerprint_tool_failure(tool=call.name, target=target, kind=kind.strip()[:80], detail=detail)
    kind = record.failure_kind or ("nonzero-exit" if record.exit_code else str(record.state))
    detail = record.message or ""
    if call.name == ToolName.RUN_COMMAND.value:
        output = f"{record.stdout or ''}\n{record.stderr or ''}"
        detail = f"{detail}\n{output}" if failing_test_names(output) else f"{detail}\n{output[-_OUTPUT_TAIL_CHARS:]}"
    return fingerprint_tool_failure(tool=call.name, target=target, kind=kind, detail=detail)
