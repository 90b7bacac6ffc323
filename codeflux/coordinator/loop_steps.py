"""The implementation loop's bookkeeping: which plan steps are done, and what a tool result says.

A plan step counts as done only when a compatible tool **succeeded** on one of its expected files:
``write_file`` or ``edit_file`` on that path, or ``apply_patch`` whose diff names it. A step that names
no file is done once any such write succeeded. What the model says about its progress never counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from codeflux.coordinator.tool_driver import ExecutionRecord
from codeflux.domain.plans import Plan
from codeflux.domain.tools import ToolName

__all__ = ["WRITING_TOOLS", "StepTracker", "describe_execution", "execution_failed", "paths_written"]

WRITING_TOOLS: Final = frozenset({ToolName.WRITE_FILE.value, ToolName.EDIT_FILE.value, ToolName.APPLY_PATCH.value})
_SHOWN_CHARS: Final = 16_000


def _clean(path: str) -> str:
    parts = [part for part in path.strip().split("/") if part not in ("", ".")]
    return "/".join(parts)


def paths_written(tool: str, arguments: Mapping[str, object]) -> frozenset[str]:
    """The repository-relative paths a successful ``tool`` call with ``arguments`` wrote."""
    if tool in (ToolName.WRITE_FILE.value, ToolName.EDIT_FILE.value):
        path = arguments.get("path")
        return frozenset({_clean(path)}) if isinstance(path, str) else frozenset()
    if tool == ToolName.APPLY_PATCH.value:
        patch = arguments.get("patch")
        if not isinstance(patch, str):
            return frozenset()
        found = set()
        for line in patch.splitlines():
            if line.startswith(("+++ ", "--- ")):
                name = line[4:].split("\t", 1)[0].strip()
                if name != "/dev/null":
                    found.add(_clean(name[2:] if name.startswith(("a/", "b/")) else name))
        return frozenset(found)
    return frozenset()


@dataclass(slots=True)
class StepTracker:
    """The plan's steps and which of them a successful write has completed."""

    plan: Plan
    done: set[int] = field(default_factory=set)

    def record_write(self, paths: frozenset[str]) -> None:
        if not paths:
            return
        for index, step in enumerate(self.plan.steps):
            if not step.expected_files or paths & set(step.expected_files):
                self.done.add(index)

    @property
    def pending_titles(self) -> tuple[str, ...]:
        return tuple(step.title for index, step in enumerate(self.plan.steps) if index not in self.done)

    @property
    def done_titles(self) -> tuple[str, ...]:
        return tuple(step.title for index, step in enumerate(self.plan.steps) if index in self.done)

    @property
    def all_done(self) -> bool:
        return len(self.done) == len(self.plan.steps)


def execution_failed(record: ExecutionRecord) -> bool:
    """A tool execution failed when it did not succeed, or its program exited non-zero."""
    return record.state != "succeeded" or (record.exit_code is not None and record.exit_code != 0)


def describe_execution(record: ExecutionRecord) -> str:
    """What the model is told about an execution (text already redacted by the driver), bounded."""
    lines = [f"state: {record.state}"]
    if record.failure_kind:
        lines.append(f"failure: {record.failure_kind}")
    if record.message:
        lines.append(f"message: {record.message}")
    if record.exit_code is not None:
        lines.append(f"exit code: {record.exit_code}")
    for label, text in (("content", record.content), ("stdout", record.stdout), ("stderr", record.stderr)):
        if text:
            lines.append(f"{label}:\n{text[-_SHOWN_CHARS:]}")
    return "\n".join(lines)
