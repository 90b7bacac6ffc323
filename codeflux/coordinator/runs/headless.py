"""Headless runs: what may go ahead without a person, and the recorded denial of everything else.

A :class:`HeadlessPolicy` lists **exact operations**, never capabilities: a tool and every one of its
arguments exactly as the request binds them (for ``run_command``, the exact argv — program as written,
every argument, in order). Nothing else is pre-approved: no prefix, no wildcard, no "any pytest", no
capability such as ``process`` or ``network``. A request that matches is decided ``allow-once`` by the
headless policy, on that request only (its operation identity, which also pins the resolved program's
path and sha256 and the task, is what the approval binds to). A pending request that matches nothing is
decided ``deny`` by the headless policy with a reason that names the operation and the cause — "not in
the pre-approved operations; prompting is off" — so the refusal is on record and the run ends with an
outcome the CLI maps to exit 4 (a decision is needed).

Why not operation identities: an identity hashes the task id, so none can be written before the task
exists; the exact (tool, arguments) pair is what a person can write on a command line and read back.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from codeflux.authority.decide import Decider, UserDecision
from codeflux.coordinator.runs.tool_driver import SubmittedRequest, ToolDriver
from codeflux.domain.display import argument_display_text, escape_for_display
from codeflux.domain.tools import ArgumentValue, ToolName, bind_tool_request
from codeflux.pipeline.tool_overlay import ToolSource, install_argv

__all__ = ["NO_TOOLS_INSTALL", "HeadlessDecision", "HeadlessPolicy", "PreapprovedOperation", "decide_headless",
           "tool_source_for"]

NO_TOOLS_INSTALL: Final = ("a headless run installs codeflux's check tools into its overlay only with "
                           "--allow-check-tools")


@dataclass(frozen=True, slots=True, kw_only=True)
class PreapprovedOperation:
    """One exact operation: ``tool`` and its bound arguments in the descriptor's order."""

    tool: ToolName
    arguments: tuple[tuple[str, ArgumentValue], ...]

    @classmethod
    def of(cls, tool: str, arguments: Mapping[str, object]) -> PreapprovedOperation:
        """The operation ``tool`` with ``arguments`` (validated like a model's request; errors are typed)."""
        bound = bind_tool_request(tool, arguments)
        return cls(tool=bound.tool, arguments=tuple((a.name, a.value) for a in bound.arguments))

    @classmethod
    def command(cls, argv: Sequence[str]) -> PreapprovedOperation:
        """``run_command`` with exactly ``argv``."""
        return cls.of(ToolName.RUN_COMMAND.value, {"argv": list(argv)})

    def __str__(self) -> str:
        """The operation on one line, as it is shown in decision reasons and the CLI: for ``run_command`` the
        argv as ``shlex.join`` writes it, every argument escaped for display
        (:func:`codeflux.domain.display.escape_for_display`), so a bidi override or a newline in an argument
        can neither reorder nor split what a person reads."""
        if self.tool is ToolName.RUN_COMMAND:
            argv = dict(self.arguments).get("argv", ())
            words = argv if isinstance(argv, tuple) else (argv,)
            return f"run_command {shlex.join(_shown(word) for word in words)}"
        return f"{self.tool} {', '.join(f'{name}={_shown(value)}' for name, value in self.arguments)}"[:300]


def _shown(value: ArgumentValue) -> str:
    return escape_for_display(argument_display_text(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadlessPolicy:
    """The operations a headless run may perform without asking (see the module docstring)."""

    preapproved_operations: frozenset[PreapprovedOperation] = frozenset()
    check_tools: bool = False
    """``--allow-check-tools``: the one install of codeflux's check tools into its overlay that the run's own
    pre-flight computes (from codeflux's installation or a wheelhouse, never an index: no network) is
    pre-approved as that exact request; without it no such install is asked for."""

    @classmethod
    def allowing(cls, operations: Iterable[PreapprovedOperation], *, check_tools: bool = False) -> HeadlessPolicy:
        return cls(preapproved_operations=frozenset(operations), check_tools=check_tools)

    def permits(self, operation: PreapprovedOperation) -> bool:
        return operation in self.preapproved_operations


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadlessDecision:
    """What the headless policy decided on one pending request."""

    request_id: str
    operation: str
    allowed: bool
    reason: str


def decide_headless(
    policy: HeadlessPolicy, driver: ToolDriver, request_id: str, *, tool: str, arguments: Mapping[str, object],
    check_tools_install: bool = False,
) -> HeadlessDecision:
    """Decide the pending ``request_id`` for the headless policy: allow-once an exact pre-approved
    operation — or, ``check_tools_install``, the run's own no-network install of codeflux's check tools under
    ``--allow-check-tools`` — otherwise record a denial naming the operation and why."""
    operation = PreapprovedOperation.of(tool, arguments)
    allowed = policy.permits(operation) or (check_tools_install and policy.check_tools)
    if allowed and not policy.permits(operation):
        reason = (f"pre-approved for this headless run by --allow-check-tools: codeflux's check-tools install "
                  f"into its overlay, no network: {operation}")[:1000]
        decided: SubmittedRequest = driver.decide(request_id, UserDecision.ALLOW_ONCE, reason=reason,
                                                  decided_by=Decider.HEADLESS_POLICY)
    elif allowed:
        reason = f"pre-approved for this headless run: {operation}"
        decided = driver.decide(request_id, UserDecision.ALLOW_ONCE, reason=reason,
                                decided_by=Decider.HEADLESS_POLICY)
    else:
        reason = (f"headless run: {operation} is not in the pre-approved operations and prompting is off; "
                  "allow it exactly to let it run")[:1000]
        decided = driver.decide(request_id, UserDecision.DENY, reason=reason, decided_by=Decider.HEADLESS_POLICY)
    return HeadlessDecision(request_id=decided.request_id, operation=str(operation), allowed=allowed, reason=reason)


def tool_source_for(policy: HeadlessPolicy | None, source: ToolSource) -> ToolSource:
    """Where a run's checks may install a missing check tool from: ``source`` — unless the run is headless
    with neither ``--allow-check-tools`` nor the exact install request among its pre-approved operations: it then
    asks for no install at all (the stages name the flag)."""
    if policy is None or policy.check_tools or source.declined is not None or _preapproves_install(policy, source):
        return source
    return dataclasses.replace(source, declined=NO_TOOLS_INSTALL)


def _preapproves_install(policy: HeadlessPolicy, source: ToolSource) -> bool:
    """One of the pre-approved operations is the check tools' install request from ``source`` (for any
    interpreter: the one it names)."""
    for operation in policy.preapproved_operations:
        argv = dict(operation.arguments).get("argv") if operation.tool is ToolName.RUN_COMMAND else None
        if isinstance(argv, tuple) and argv and argv == install_argv(str(argv[0]), source):
            return True
    return False
