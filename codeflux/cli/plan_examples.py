"""`codeflux task plan TASK --set-example / --add-example / --remove-example`: edit the acceptance examples of
the newest plan revision before approving it (issue 14 item 1), through ``TaskService/EditPlanExamples``.

One edit per command: ``--set-example N SPEC`` changes example N, ``--add-example SPEC`` appends one,
``--remove-example N`` (repeatable) removes examples. SPEC is ``test: PATH::NAME`` (one pytest node id) or
``command: PROGRAM ARG…`` — the command is split into an argv as a POSIX shell splits words (``shlex.split``;
it is never run by a shell) and stored as that argv — with ``--expected LINE`` (repeatable) for each line it must
print. ``--step N`` (repeatable) names the plan step(s) that serve the changed or added example; without it a
changed example keeps its steps and a new one needs them (unless the plan has one step). The edit records the
next revision, by you; approve that one. The numbers refer to the revision edited (``--revision``/``--sha256``,
default the newest), whose examples ``codeflux task show`` lists.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Final

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli.channel import Channel, control
from codeflux.cli.context import CliContext
from codeflux.domain.acceptance import AcceptanceExample, parse_example
from codeflux.domain.errors import UsageError

__all__ = ["add_edit_arguments", "edit_examples", "edits_examples"]

_SPEC: Final = "'test: PATH::NAME' or 'command: PROGRAM ARG…'"


def add_edit_arguments(sub: argparse.ArgumentParser, *, parse_count: Callable[[str], int]) -> None:
    """The edit flags of ``codeflux task plan`` (with them it edits the examples instead of drafting)."""
    group = sub.add_argument_group(
        "editing the plan's acceptance examples (instead of drafting a revision)",
        "One edit per command; it records the next plan revision, by you, which you then approve. A command is "
        "split like shell words (never run by a shell) and stored as its argv.")
    edit = group.add_mutually_exclusive_group()
    edit.add_argument("--set-example", nargs=2, metavar=("N", "SPEC"), default=None,
                      help=f"replace example N with SPEC ({_SPEC})")
    edit.add_argument("--add-example", metavar="SPEC", default=None, help=f"append an example ({_SPEC})")
    edit.add_argument("--remove-example", action="append", type=parse_count, metavar="N", default=None,
                      help="remove example N (repeat to remove several; the last example cannot be removed)")
    group.add_argument("--expected", action="append", metavar="LINE", default=None,
                       help="a line the set or added command must print (repeat for each line, in order)")
    group.add_argument("--step", action="append", type=parse_count, metavar="N", default=None,
                       help=("a plan step that serves the set or added example (repeat for several; required for a "
                             "new example when the plan has more than one step)"))
    group.add_argument("--revision", type=parse_count, default=None, metavar="N",
                       help="the plan revision whose examples you edit (default: the newest)")
    group.add_argument("--sha256", default=None, metavar="H", help="that revision's sha256 (default: the newest's)")


def edits_examples(args: argparse.Namespace) -> bool:
    """Whether this ``task plan`` command edits the examples (else it drafts a revision, and the edit-only flags
    are refused)."""
    editing = any(getattr(args, name, None) is not None for name in ("set_example", "add_example", "remove_example"))
    stray = [flag for flag, name in (("--expected", "expected"), ("--step", "step"), ("--revision", "revision"),
                                     ("--sha256", "sha256")) if getattr(args, name, None) is not None]
    if not editing and stray:
        raise UsageError(f"{', '.join(stray)} go with --set-example, --add-example or --remove-example")
    return editing


def _example(spec: str, expected: list[str] | None) -> AcceptanceExample:
    if "\n" in spec or any("\n" in line for line in expected or ()):
        raise UsageError("an example SPEC and each --expected are one line; repeat --expected for each line")
    return parse_example("\n".join([spec, *(f"expected: {line}" for line in expected or ())]))


def _entry(example: AcceptanceExample, *, number: int, steps: list[int] | None) -> pb.PlanExampleEdit:
    return pb.PlanExampleEdit(number=number, test=example.test or "", argv=list(example.argv),
                              expected=list(example.expected), steps=steps or [])


def _edited_list(args: argparse.Namespace, count: int) -> list[pb.PlanExampleEdit]:
    """The whole new list: every example of the revision kept by number, with this command's one edit applied."""
    if args.remove_example is not None:
        if args.expected or args.step:
            raise UsageError("--expected and --step go with --set-example or --add-example, not --remove-example")
        missing = sorted({n for n in args.remove_example if not 1 <= n <= count})
        if missing:
            raise UsageError(f"there is no example {', '.join(map(str, missing))} (the plan has {count})")
        return [pb.PlanExampleEdit(number=n) for n in range(1, count + 1) if n not in args.remove_example]
    entries = [pb.PlanExampleEdit(number=n) for n in range(1, count + 1)]
    if args.add_example is not None:
        return [*entries, _entry(_example(args.add_example, args.expected), number=0, steps=args.step)]
    number_text, spec = args.set_example
    if not number_text.isascii() or not number_text.isdigit() or not 1 <= int(number_text) <= count:
        raise UsageError(f"--set-example N SPEC: N is an example number from 1 to {count}")
    number = int(number_text)
    entries[number - 1] = _entry(_example(spec, args.expected), number=number, steps=args.step)
    return entries


def edit_examples(args: argparse.Namespace, ctx: CliContext, channel: Channel, task_id: str) -> pb.TaskView:
    """Send this command's edit as the whole new list; the reply is the task with the edited revision."""
    plan = channel.call("TaskService/GetTask", pb.GetTaskRequest(task_id=task_id), pb.TaskView).plan
    if not plan.revision:
        raise UsageError(f"task {task_id} has no plan yet: draft one with `codeflux task plan {task_id}`")
    if not plan.examples_editable:
        raise UsageError(f"task {task_id}, plan revision {plan.revision}: {plan.examples_edit_note}")
    revision = args.revision if args.revision is not None else plan.revision
    sha256 = args.sha256 if args.sha256 is not None else plan.sha256
    request = pb.EditPlanExamplesRequest(control=control(), task_id=task_id, revision=revision, sha256=sha256,
                                         examples=_edited_list(args, len(plan.plan_examples)))
    view = channel.call("TaskService/EditPlanExamples", request, pb.TaskView)
    ctx.say(f"task {task_id}: the examples of plan revision {revision} edited; plan revision {view.plan.revision} "
            "records them (by you)")
    return view
