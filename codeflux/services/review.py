"""``ReviewService``: the review drawer (diff, checks, evidence), the 37-stage ledger, accept and reject.

* ``GetReview`` — the task worktree's diff against its base (:func:`codeflux.gitwork.diff.diff_against_base`):
  identity, base, head, files and the unified diff (at most :data:`MAX_DIFF_BYTES`, cut at a line end,
  ``diff_truncated`` set); ``checks`` are the newest attempt's ledger rows of the stages codeflux performs
  (integration-tests among them) with their outcomes; ``evidence`` and ``not_examined`` come from the
  stage-35 evidence bundle exactly as recorded; ``evidence_matches_diff`` says whether the bundle saw
  this very diff; ``budget`` is the task's measured spend so far and what remains of its hard limit
  (the same figures and ``spend_line`` as ``task show`` and ``codeflux run``). Paths the diff could not
  hold (nested repositories, special files) are listed as not examined. ``changes_what_runs`` lists the
  changed files that change what later commands execute (``conftest.py``, ``pytest.ini``, a Makefile, a
  ``.pth`` file, …) with why (:func:`codeflux.domain.review_flags.changes_what_runs`). ``line_notes`` are the
  newest attempt's obligations and uncovered branch arcs at the lines they belong to
  (:mod:`codeflux.domain.pipeline.line_notes`; at most :data:`MAX_LINE_NOTES`), which the diff viewer shows there.
  Once the worktree is gone the review stays readable (``diff_source`` says which diff it shows): an accepted
  (completed) task's diff is its base to the task commit it landed (the ``task-accepted`` event's, read from the
  repository by :func:`codeflux.gitwork.diff.committed_diff`), with the reviewed identity; otherwise the patch kept
  for the task (``task_patches``, as ``GetPatch``: the rejected one, else the newest preserved one). While the
  worktree exists ``diff_source`` is ``worktree``.
* ``ListStages`` — all 37 stages of an attempt (0 = the newest) with their gate text and the recorded
  outcome, empty where nothing is recorded yet.
* ``AcceptChange`` / ``RejectChange`` — :class:`codeflux.coordinator.tasks.review.ReviewService`, bound to the
  reviewed diff identity: a stale identity is ABORTED, a dirty checkout FAILED_PRECONDITION, a conflict is
  a reply (``kind`` "conflict", nothing changed). A rejection needs a reason; with ``retry`` the diff is
  rejected (its patch kept, stage 36 failed) as the next attempt on the same plan starts, in one transaction,
  and the coordinator runs that attempt in the background with the reason as its feedback
  (:mod:`codeflux.coordinator.tasks.rejection`). A retry with the same idempotency key returns the first
  reply (:class:`~codeflux.services.mutations.MutationLedger`); the coordinator keys each decision by the
  reviewed identity as well.
* ``GetEvidence`` — ``codeflux task evidence``: one attempt's per-atom evidence (0 = the newest) — the
  stage-35 bundle's ``atom_evidence`` section as recorded, or, when the attempt has no bundle (the run stopped
  before 35, or an older codeflux recorded it), the same section built from the attempt's ledger rows
  (:func:`codeflux.domain.pipeline.atom_evidence.atom_evidence`) — with all 37 stages and their outcomes. The
  review's ``atoms`` are the newest attempt's, read the same way. A fact longer than :data:`MAX_FACT_CHARS` of
  JSON is replaced by a sentence saying so, and findings past :data:`MAX_ATOM_FINDINGS` by how many more.
* ``GetDiff`` / ``GetPatch`` — the terminal's ``codeflux task diff`` and ``task patch``: the exact bytes of the
  worktree's diff (with its identity and the files that change what runs) or of the kept patch, cut at a
  line end after :data:`MAX_TERMINAL_BYTES` (``truncated`` and ``whole_bytes`` say so), which keeps a reply
  inside the transport's message limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.journal import latest_session_event
from codeflux.coordinator.tasks.conventions import learn_review_convention
from codeflux.coordinator.tasks.ledger import evidence_diff_identity
from codeflux.coordinator.tasks.records import require_run_attempt
from codeflux.coordinator.tasks.review import ReviewService as CoordinatorReview
from codeflux.coordinator.tasks.service import TaskService
from codeflux.coordinator.tasks.worktree_lifecycle import task_worktree_binding
from codeflux.domain.errors import InvalidValueError, NotFoundError, TaskActionUnavailableError
from codeflux.domain.events import EventKind, TaskAccepted
from codeflux.domain.ids import TaskId
from codeflux.domain.pipeline import PERFORMABLE_STAGES, STAGES, StageName
from codeflux.domain.pipeline.atom_evidence import atom_evidence
from codeflux.domain.pipeline.ledger import LedgerRow
from codeflux.domain.pipeline.line_notes import line_notes
from codeflux.domain.pipeline.outcomes import StageOutcome
from codeflux.domain.review_flags import changes_what_runs
from codeflux.domain.tasks import TaskState
from codeflux.gitwork.diff import TaskDiff, committed_diff, diff_against_base, patch_files
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import MutationLedger, mutation_of, parse_task_id
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.views import budget_view, task_view

__all__ = ["MAX_DIFF_BYTES", "MAX_TERMINAL_BYTES", "evidence_view", "methods", "review_view", "stage_views"]

MAX_DIFF_BYTES: Final = 1 << 20
MAX_TERMINAL_BYTES: Final = 3 << 20
MAX_FACT_CHARS: Final = 4000
MAX_ATOM_FINDINGS: Final = 50
"""Per atom and stage, what a reply carries (the review shares the transport's 4 MiB message with the diff)."""
MAX_LINE_NOTES: Final = 2000
DIFF_FROM_WORKTREE: Final = "worktree"
DIFF_FROM_LANDED_COMMIT: Final = "landed-commit"
DIFF_FROM_KEPT_PATCH: Final = "kept-patch"
_IDENTITY: Final = re.compile(r"[0-9a-f]{64}")
_SERVICE: Final = "ReviewService"
_DETAIL_KEYS: Final = ("argv", "exit_code", "tests", "passed", "failures", "errors", "skipped", "failing",
                        "failing_on_base_too", "discrimination", "not_shown_to_need_this_change")


def _tasks(app: CoordinatorApp) -> TaskService:
    return TaskService(app.db, worktrees_root=app.location.worktrees)


def _identity(text: str) -> str:
    if _IDENTITY.fullmatch(text) is None:
        raise InvalidValueError(kind="diff identity", reason="diff_identity must be the 64 hex digits reviewed")
    return text


def _cut(data: bytes, limit: int) -> tuple[bytes, bool]:
    """``data``, or its first ``limit`` bytes cut back to a line end."""
    if len(data) <= limit:
        return data, False
    cut = data[:limit]
    line_end = cut.rfind(b"\n")
    return (cut[: line_end + 1] if line_end > 0 else cut), True


def _capped(diff: bytes) -> tuple[str, bool]:
    cut, truncated = _cut(diff, MAX_DIFF_BYTES)
    return cut.decode("utf-8", errors="replace"), truncated


def diff_bytes(app: CoordinatorApp, task_id: TaskId) -> pb.DiffBytes:
    """The worktree's diff for the terminal (see the module docstring)."""
    diff = _task_diff(app, task_id)
    data, truncated = _cut(diff.unified_diff, MAX_TERMINAL_BYTES)
    checked = app.db.read(lambda view: evidence_diff_identity(view, task_id))
    return pb.DiffBytes(evidence_diff_identity=checked or "",
        diff_identity=diff.identity, base=diff.base, head=diff.head, file_count=len(diff.files), unified_diff=data,
        truncated=truncated, whole_bytes=len(diff.unified_diff), limit_bytes=MAX_TERMINAL_BYTES,
        changes_what_runs=[pb.WhatRunsChangeView(path=flag.path, reason=flag.reason)
                           for flag in changes_what_runs(f.path for f in diff.files)])


def patch_view(app: CoordinatorApp, task_id: TaskId) -> pb.PatchView:
    """The patch kept for the task, exact bytes (cut like :func:`diff_bytes`)."""
    kept = CoordinatorReview(app.db).task_patch(task_id)
    data, truncated = _cut(kept.patch, MAX_TERMINAL_BYTES)
    return pb.PatchView(diff_identity=kept.diff_identity, patch=data, truncated=truncated, whole_bytes=len(kept.patch))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _evidence_detail(evidence: object) -> str:
    if not isinstance(evidence, Mapping):
        return ""
    parts = []
    for key in _DETAIL_KEYS:
        if key not in evidence:
            continue
        value = evidence[key]
        shown = " ".join(str(v) for v in value) if isinstance(value, list) else str(value)
        parts.append(f"{key.replace('_', ' ')} {shown}"[:300])
    return "; ".join(parts)


def _bundle_lines(bundle: Mapping[str, object]) -> tuple[list[str], list[str]]:
    """(evidence, not examined) as the stage-35 bundle recorded them."""
    counts = bundle.get("counts")
    identity = _text(bundle.get("diff_identity")) or "unknown"
    evidence = [f"evidence bundle of plan revision {bundle.get('plan_revision')} on diff {identity[:12]}"
                + (": " + ", ".join(f"{v} {k}" for k, v in counts.items()) if isinstance(counts, Mapping) else "")]
    support = _text(bundle.get("support"))
    if support and support != "python":  # e.g. "experimental: generic checks only (not a Python repository)"
        evidence.append(support)
    claims = bundle.get("claims")
    for claim in claims if isinstance(claims, list) else []:
        if not isinstance(claim, Mapping) or claim.get("outcome") not in ("satisfied", "failed", "skipped"):
            continue
        said = _text(claim.get("checked")) or _text(claim.get("reason"))
        detail = _evidence_detail(claim.get("evidence"))
        evidence.append(f"{claim.get('number')} {claim.get('stage')}: {claim.get('outcome')} — {said}"
                        + (f" ({detail})" if detail else ""))
    not_examined = []
    unexamined = bundle.get("not_examined")
    for item in unexamined if isinstance(unexamined, list) else []:
        if isinstance(item, Mapping):
            reason = _text(item.get("reason"))
            not_examined.append(f"{item.get('stage')}: {item.get('outcome')}" + (f" — {reason}" if reason else ""))
    return evidence, not_examined


def _check(row: LedgerRow) -> pb.CheckView:
    verdict = row.verdict
    said = verdict.gate_evaluation or verdict.reason or ""
    detail = _evidence_detail(row.evidence)
    return pb.CheckView(name=verdict.stage.value, outcome=verdict.outcome.value,
                        detail=said + (f" ({detail})" if detail else ""))


def _task_diff(app: CoordinatorApp, task_id: TaskId) -> TaskDiff:
    task = _tasks(app).show(task_id).task
    binding = task_worktree_binding(task)
    if binding is None or not binding.path.exists():
        reason = ("the task never ran, so it has no diff to review" if binding is None
                  else "the task's worktree is gone (the task ended); `codeflux task patch` shows a kept patch")
        raise TaskActionUnavailableError(task_id=task_id.value, action="review", state=task.state.value,
                                         reason=reason)
    return diff_against_base(binding)


def _reviewed_diff(app: CoordinatorApp, task_id: TaskId) -> tuple[TaskDiff, str]:
    """The diff the review shows and where it comes from (see the module docstring): the worktree's while it
    exists, else an accepted task's landed commit or a rejected task's kept patch."""
    task = _tasks(app).show(task_id).task
    binding = task_worktree_binding(task)
    if binding is not None and binding.path.exists():
        return diff_against_base(binding), DIFF_FROM_WORKTREE
    if binding is not None and task.state is TaskState.COMPLETED:
        accepted = latest_session_event(app.db, session_id=task.session_id, kinds=[EventKind.TASK_ACCEPTED.value])
        if accepted is not None and isinstance(accepted.event, TaskAccepted) and accepted.event.task_id == task_id:
            landed = committed_diff(task.repository_root, base=binding.base, commit=accepted.event.task_commit)
            return replace(landed, identity=accepted.event.diff_identity), DIFF_FROM_LANDED_COMMIT
    kept = _kept_patch(app, task_id) if binding is not None else None
    if kept is not None:
        return kept, DIFF_FROM_KEPT_PATCH
    return _task_diff(app, task_id), DIFF_FROM_WORKTREE


def _kept_patch(app: CoordinatorApp, task_id: TaskId) -> TaskDiff | None:
    """The patch kept for the task as a diff (the rejected one, else the newest preserved one); None without one."""
    try:
        kept = CoordinatorReview(app.db).task_patch(task_id)
    except NotFoundError:
        return None
    return TaskDiff(base=kept.base_commit, head=kept.head_commit, unified_diff=kept.patch,
                    files=patch_files(kept.patch), skipped_paths=(), identity=kept.diff_identity)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _fact(name: str, value: object) -> pb.AtomFactView:
    text = json.dumps(value, sort_keys=True)
    if len(text) > MAX_FACT_CHARS:  # said, never silently cut: the ledger row holds all of it
        text = json.dumps(f"not shown: {len(text)} characters of JSON (more than {MAX_FACT_CHARS}); the stage's "
                          "evidence in the ledger holds it")
    return pb.AtomFactView(name=name, value_json=text)


def _atom_stage(item: Mapping[str, object]) -> pb.AtomStageEvidenceView:
    listed = item.get("findings")
    findings = [str(finding) for finding in listed] if isinstance(listed, list) else []
    if len(findings) > MAX_ATOM_FINDINGS:
        findings = [*findings[:MAX_ATOM_FINDINGS], f"… and {len(findings) - MAX_ATOM_FINDINGS} more (see the "
                    "stage's evidence)"]
    facts = item.get("facts")
    return pb.AtomStageEvidenceView(
        number=_int(item.get("number")), stage=_text(item.get("stage")), measures=_text(item.get("measures")),
        outcome=_text(item.get("outcome")), measured=item.get("measured") is True,
        not_measured=_text(item.get("not_measured")), summary=_text(item.get("summary")), findings=findings,
        facts=[_fact(str(key), value) for key, value in facts.items()] if isinstance(facts, Mapping) else [])


def _atom_views(section: Mapping[str, object]) -> list[pb.AtomEvidenceView]:
    atoms = section.get("atoms")
    views = []
    for atom in atoms if isinstance(atoms, list) else []:
        if not isinstance(atom, Mapping):
            continue
        lines = atom.get("lines")
        first, last = (lines if isinstance(lines, list) and len(lines) == 2 else (0, 0))
        stages = atom.get("evidence")
        views.append(pb.AtomEvidenceView(
            qualified_name=_text(atom.get("qualified_name")), path=_text(atom.get("path")),
            first_line=_int(first), last_line=_int(last), change=_text(atom.get("change")),
            stages=[_atom_stage(item) for item in stages if isinstance(item, Mapping)]
            if isinstance(stages, list) else []))
    return views


def _atom_section(rows: Sequence[LedgerRow]) -> tuple[Mapping[str, object], str]:
    """The attempt's per-atom section and where it came from (see the module docstring)."""
    bundle = next((row.evidence for row in rows if row.verdict.stage is StageName.EVIDENCE_BUNDLE), None)
    recorded = None if bundle is None else bundle.get("atom_evidence")
    if isinstance(recorded, Mapping):
        return recorded, "evidence-bundle"
    return atom_evidence([row.verdict for row in rows], {row.verdict.stage: row.evidence for row in rows}), "ledger"


def evidence_view(app: CoordinatorApp, task_id: TaskId, attempt: int) -> pb.EvidenceView:
    """One attempt's per-atom evidence and its stages (see the module docstring)."""
    stages = stage_views(app, task_id, attempt)
    rows = _tasks(app).ledger(task_id, stages.attempt) if stages.attempt else []
    section, source = _atom_section(rows)
    bundle = next((row.evidence for row in rows if row.verdict.stage is StageName.EVIDENCE_BUNDLE), {})
    unexamined = section.get("files_not_examined")
    return pb.EvidenceView(task_id=task_id.value, attempt=stages.attempt, diff_identity=_text(
        bundle.get("diff_identity")), source=source, atoms=_atom_views(section),
        atom_count=_int(section.get("atom_count")), stages=list(stages.stages),
        files_not_examined=[f"{path}: {reason}" for path, reason in unexamined.items()]
        if isinstance(unexamined, Mapping) else [])


# The stages that are this very decision and what follows it: blocked until a person accepts, never a warning.
_DECIDED_BY_ACCEPT: Final = frozenset({StageName.HUMAN_ACCEPTANCE, StageName.DELIVER})


def accept_warnings(checks: Sequence[LedgerRow]) -> list[str]:
    """What Accept must warn about: every check before the person's acceptance that failed, was blocked or did
    not run (``not-implemented``); or, with no check recorded at all, that nothing was checked. A ``skipped``
    check is not one: its stage was unnecessary for this run's facts, and says why."""
    considered = [row for row in checks if row.verdict.stage not in _DECIDED_BY_ACCEPT]
    if not considered:
        return ["no check was recorded for this diff: nothing was checked"]
    warnings = []
    for row in considered:
        verdict = row.verdict
        said = verdict.reason or verdict.gate_evaluation or ""
        match verdict.outcome:
            case StageOutcome.FAILED:
                what = "failed"
            case StageOutcome.BLOCKED:
                what = "was blocked (it did not run)"
            case StageOutcome.NOT_IMPLEMENTED:
                what = "did not run"
            case StageOutcome.SATISFIED | StageOutcome.SKIPPED:
                continue
        warnings.append(f"{verdict.stage.value} {what}" + (f": {said}" if said else ""))
    return warnings


def review_view(app: CoordinatorApp, task_id: TaskId) -> pb.ReviewView:
    """The review of the task's current diff (see the module docstring)."""
    tasks = _tasks(app)
    diff, source = _reviewed_diff(app, task_id)
    attempt = tasks.show(task_id).attempt
    rows = [] if attempt is None else tasks.ledger(task_id, attempt.attempt)
    bundle_row = next((row for row in rows if row.verdict.stage is StageName.EVIDENCE_BUNDLE), None)
    bundle = {} if bundle_row is None else dict(bundle_row.evidence)
    evidence, not_examined = _bundle_lines(bundle) if bundle else ([], ["no evidence bundle is recorded yet"])
    not_examined += [f"{path}: not part of the diff (a nested repository or a special file)"
                     for path in diff.skipped_paths]
    section = _atom_section(rows)[0]
    unexamined = section.get("files_not_examined")
    not_examined += [f"{path}: its atoms were not listed ({reason})" for path, reason in unexamined.items()] \
        if isinstance(unexamined, Mapping) else []
    text, truncated = _capped(diff.unified_diff)
    checks = [row for row in rows if row.verdict.stage in PERFORMABLE_STAGES
              and row.verdict.stage is not StageName.EVIDENCE_BUNDLE]
    return pb.ReviewView(
        task_id=task_id.value, diff_identity=diff.identity, base=diff.base, head=diff.head, diff_source=source,
        files=[pb.DiffFileView(path=f.path, status=f.kind.value) for f in diff.files],
        unified_diff=text, diff_truncated=truncated,
        checks=[_check(row) for row in checks], accept_warnings=accept_warnings(checks),
        evidence=evidence, not_examined=not_examined,
        evidence_matches_diff=bool(bundle) and bundle.get("diff_identity") == diff.identity,
        changes_what_runs=[pb.WhatRunsChangeView(path=flag.path, reason=flag.reason)
                           for flag in changes_what_runs(f.path for f in diff.files)],
        budget=budget_view(app, task_id), atoms=_atom_views(section),
        line_notes=[] if attempt is None else _line_notes(app, task_id, attempt.attempt, rows,
                                                          [f.path for f in diff.files]))


def _line_notes(app: CoordinatorApp, task_id: TaskId, attempt: int, rows: Sequence[LedgerRow],
                paths: Sequence[str]) -> list[pb.LineNoteView]:
    """The attempt's obligations, uncovered arcs, surviving mutants and findings at their lines
    (:mod:`codeflux.domain.pipeline.line_notes`)."""
    coverage = next((row.evidence for row in rows if row.verdict.stage is StageName.PATH_COVERAGE), None)
    evidence = {row.verdict.stage.value: row.evidence for row in rows
                if row.verdict.stage is not StageName.PATH_COVERAGE}
    notes = line_notes(_tasks(app).obligations(task_id, attempt), coverage, stage_evidence=evidence, paths=paths)
    return [pb.LineNoteView(path=note.path, line=note.line, kind=note.kind, subject=note.subject, state=note.state,
                            text=note.text) for note in notes][:MAX_LINE_NOTES]


def stage_views(app: CoordinatorApp, task_id: TaskId, attempt: int) -> pb.ListStagesReply:
    """Every stage of ``attempt`` (0: the newest) with its outcome, or empty outcomes before any run."""
    if attempt < 0:
        raise InvalidValueError(kind="attempt", reason="attempt is 0 (the newest) or a positive attempt number")
    tasks = _tasks(app)
    if attempt == 0:
        newest = tasks.show(task_id).attempt
        attempt = 0 if newest is None else newest.attempt
    else:
        tasks.show(task_id)  # NotFoundError for an unknown task
        require_run_attempt(app.db, task_id, attempt)
    recorded = {row.verdict.stage: row for row in tasks.ledger(task_id, attempt)} if attempt else {}
    stages = []
    for stage in STAGES:
        row = recorded.get(stage.name)
        stages.append(pb.StageView(
            number=stage.number, name=stage.name.value, phase=stage.phase.label, gate=stage.gate,
            outcome="" if row is None else row.verdict.outcome.value,
            detail="" if row is None else (row.verdict.gate_evaluation or row.verdict.reason or "")))
    return pb.ListStagesReply(attempt=attempt, stages=stages)


def _accept(app: CoordinatorApp, ledger: MutationLedger, ctx: CallContext,
            request: pb.AcceptChangeRequest) -> pb.AcceptChangeReply:
    mutation = mutation_of(ctx, "AcceptChange", request.control)
    task_id = parse_task_id(request.task_id)
    identity = _identity(request.diff_identity)

    def work() -> pb.AcceptChangeReply:
        outcome = CoordinatorReview(app.db).accept_task(task_id, reviewed_identity=identity).outcome
        return pb.AcceptChangeReply(
            kind=outcome.kind.value, branch=outcome.branch, previous_head=outcome.previous_head,
            landed_head=outcome.landed_head, conflicting_paths=list(outcome.conflicting_paths),
            task=task_view(app, task_id))

    return ledger.run(mutation, request, pb.AcceptChangeReply, work)


def _reject(app: CoordinatorApp, ledger: MutationLedger, ctx: CallContext,
            request: pb.RejectChangeRequest) -> pb.TaskView:
    mutation = mutation_of(ctx, "RejectChange", request.control)
    task_id = parse_task_id(request.task_id)
    identity = _identity(request.diff_identity)
    reason = request.reason

    def work() -> pb.TaskView:
        review = CoordinatorReview(app.db)
        if not reason.strip():
            _tasks(app).show(task_id)  # an unknown task is NOT_FOUND before the missing reason
            raise InvalidValueError(kind="rejection reason", reason="say why the diff is rejected")
        if request.retry:  # rejected as the next attempt starts, in its transaction; run in the background
            app.runs.start(task_id, rejection=review.rejection(task_id, reviewed_identity=identity, reason=reason))
        else:
            review.reject_task(task_id, reviewed_identity=identity, reason=reason)
        learn_review_convention(app.db, task_id, reason=reason)  # after the decision committed; never changes it
        return task_view(app, task_id)

    return ledger.run(mutation, request, pb.TaskView, work)


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    ledger = MutationLedger()

    def get_review(ctx: CallContext, request: pb.GetReviewRequest) -> pb.ReviewView:
        return review_view(app, parse_task_id(request.task_id))

    def list_stages(ctx: CallContext, request: pb.ListStagesRequest) -> pb.ListStagesReply:
        return stage_views(app, parse_task_id(request.task_id), request.attempt)

    def get_evidence(ctx: CallContext, request: pb.GetEvidenceRequest) -> pb.EvidenceView:
        return evidence_view(app, parse_task_id(request.task_id), request.attempt)

    def get_diff(ctx: CallContext, request: pb.GetDiffRequest) -> pb.DiffBytes:
        return diff_bytes(app, parse_task_id(request.task_id))

    def get_patch(ctx: CallContext, request: pb.GetPatchRequest) -> pb.PatchView:
        return patch_view(app, parse_task_id(request.task_id))

    def accept(ctx: CallContext, request: pb.AcceptChangeRequest) -> pb.AcceptChangeReply:
        return _accept(app, ledger, ctx, request)

    def reject(ctx: CallContext, request: pb.RejectChangeRequest) -> pb.TaskView:
        return _reject(app, ledger, ctx, request)

    return [
        UnaryMethod(name=method_name(_SERVICE, "GetReview"), request_type=pb.GetReviewRequest,
                    response_type=pb.ReviewView, handler=get_review),
        UnaryMethod(name=method_name(_SERVICE, "ListStages"), request_type=pb.ListStagesRequest,
                    response_type=pb.ListStagesReply, handler=list_stages),
        UnaryMethod(name=method_name(_SERVICE, "GetEvidence"), request_type=pb.GetEvidenceRequest,
                    response_type=pb.EvidenceView, handler=get_evidence),
        UnaryMethod(name=method_name(_SERVICE, "GetDiff"), request_type=pb.GetDiffRequest,
                    response_type=pb.DiffBytes, handler=get_diff),
        UnaryMethod(name=method_name(_SERVICE, "GetPatch"), request_type=pb.GetPatchRequest,
                    response_type=pb.PatchView, handler=get_patch),
        UnaryMethod(name=method_name(_SERVICE, "AcceptChange"), request_type=pb.AcceptChangeRequest,
                    response_type=pb.AcceptChangeReply, handler=accept, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "RejectChange"), request_type=pb.RejectChangeRequest,
                    response_type=pb.TaskView, handler=reject, mutating=True),
    ]
