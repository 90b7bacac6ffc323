"""ReviewService through its method table: a whole run with real workers, the repository's real pytest and
the scripted provider (not a model) to awaiting-review, then the review drawer, the 37-stage ledger and
accept / reject against real git repositories (checked with the git CLI)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.memory_context import memory_block
from codeflux.coordinator.runs.tool_driver import ToolDriver
from codeflux.coordinator.tasks.service import TaskService
from codeflux.domain.memory import MemoryKind
from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.services import review
from codeflux.services.app import CoordinatorApp
from codeflux.services.registry import Code
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.memory import list_memory_entries
from tests.fixtures.repos import commit_all, git, write_files
from tests.fixtures.reviews import Reviewable, a_task_awaiting_review
from tests.fixtures.services import call, control, refusal, service_app
from tests.fixtures.task_runs import Harness, make_harness, run_to_review
from tests.fixtures.tasks import a_repository

FIX: dict[str, str | bytes] = {
    "pkg/calc.py": "def add(a, b):\n    return a + b  # reviewed\n\n\ndef sub(a, b):\n    return a - b\n",
    "pkg/extra.py": "VALUE = 1\n",
}
GET, STAGES = "/codeflux.v1.ReviewService/GetReview", "/codeflux.v1.ReviewService/ListStages"
ACCEPT, REJECT = "/codeflux.v1.ReviewService/AcceptChange", "/codeflux.v1.ReviewService/RejectChange"
EVIDENCE = "/codeflux.v1.ReviewService/GetEvidence"


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, review.methods)


@pytest.fixture
def harness(db: Database, tmp_path: Path) -> Iterator[Harness]:
    with ToolDriver(db, state_dir=tmp_path / "state") as driver:
        yield make_harness(db, tmp_path, driver)


@pytest.fixture
def reviewable(db: Database, tmp_path: Path) -> Reviewable:
    return a_task_awaiting_review(TaskService(db, worktrees_root=tmp_path / "worktrees"),
                                  a_repository(tmp_path / "git"), FIX)


@pytest.mark.slow
def test_a_run_to_review_shows_its_diff_checks_evidence_and_all_stages_then_accept_lands_it(
    app: CoordinatorApp, harness: Harness
) -> None:
    task_id = run_to_review(harness)

    shown = call(app, GET, pb.GetReviewRequest(task_id=task_id.value))

    assert isinstance(shown, pb.ReviewView)
    assert {(f.path, f.status) for f in shown.files} == {("pkg/calc.py", "modified"),
                                                         ("tests/test_calc.py", "modified")}
    assert "NEGATIVES_HANDLED = True" in shown.unified_diff and not shown.diff_truncated
    assert len(shown.diff_identity) == 64 and shown.evidence_matches_diff
    checks = {check.name: check for check in shown.checks}
    assert checks["integration-tests"].outcome == "satisfied" and "passed" in checks["integration-tests"].detail
    assert checks["assembly"].outcome == "satisfied"
    assert any("integration-tests: satisfied" in line for line in shown.evidence)
    assert shown.evidence[0].startswith("evidence bundle of plan revision 1 on diff " + shown.diff_identity[:12])
    assert any("end-to-end-tests: satisfied" in line for line in shown.evidence)  # the example was reproduced
    assert any("program: skipped — no build configuration" in line for line in shown.evidence)  # said, not hidden
    assert not any("not-implemented" in line for line in shown.not_examined)  # 6 recall is decided (issue 19)
    # what the work under review cost so far, and what is left (issue 14 item 10): the same line as `codeflux run`
    assert shown.budget.set and shown.budget.spent.known and shown.budget.remaining.known
    assert shown.budget.spend_line.startswith(f"spent {shown.budget.spent.amount.display} of the hard limit "
                                              f"{shown.budget.hard_limit.display}; remaining ")

    stages = call(app, STAGES, pb.ListStagesRequest(task_id=task_id.value))
    assert isinstance(stages, pb.ListStagesReply) and stages.attempt == 1
    assert [s.number for s in stages.stages] == list(range(1, 38))
    by_name = {s.name: s for s in stages.stages}
    assert by_name["integration-tests"].outcome == "satisfied" and by_name["integration-tests"].gate
    assert by_name["evidence-bundle"].phase == "Delivery" and by_name["human-acceptance"].outcome == "blocked"
    assert {s.outcome for s in stages.stages} <= {"satisfied", "failed", "skipped", "blocked", "not-implemented"}

    accepted = call(app, ACCEPT, pb.AcceptChangeRequest(control=control("a-1"), task_id=task_id.value,
                                                        diff_identity=shown.diff_identity))
    assert isinstance(accepted, pb.AcceptChangeReply) and accepted.kind == "fast-forward"
    assert git(harness.repo, "rev-parse", "HEAD").strip() == accepted.landed_head
    assert "NEGATIVES_HANDLED" in (harness.repo / "pkg/calc.py").read_text()
    assert accepted.task.state == "completed" and accepted.task.task_id == task_id.value
    # Issue 14 item 11, the "Why": after accept, 36-37 used to stay `blocked` in the ledger. Now the ledger as
    # read everywhere carries the decision: 36 names the accepted diff identity, 37 the landed commit.
    decided = {s.name: s for s in call(app, STAGES, pb.ListStagesRequest(task_id=task_id.value)).stages}
    assert decided["human-acceptance"].outcome == "satisfied"
    assert shown.diff_identity[:12] in decided["human-acceptance"].detail
    assert decided["deliver"].outcome == "satisfied" and accepted.landed_head[:12] in decided["deliver"].detail


def test_an_accepted_task_keeps_showing_the_diff_it_landed_once_its_worktree_is_gone(
    app: CoordinatorApp, reviewable: Reviewable, tmp_path: Path
) -> None:
    before = call(app, GET, pb.GetReviewRequest(task_id=reviewable.task_id.value))
    assert isinstance(before, pb.ReviewView) and before.diff_source == "worktree"
    accepted = call(app, ACCEPT, pb.AcceptChangeRequest(control=control("a-1"), task_id=reviewable.task_id.value,
                                                        diff_identity=reviewable.identity))
    assert isinstance(accepted, pb.AcceptChangeReply) and accepted.task.state == "completed"
    assert not reviewable.worktree.path.exists()

    after = call(app, GET, pb.GetReviewRequest(task_id=reviewable.task_id.value))

    assert isinstance(after, pb.ReviewView) and after.diff_source == "landed-commit"
    assert after.unified_diff == before.unified_diff and after.diff_identity == reviewable.identity
    assert [(f.path, f.status) for f in after.files] == [(f.path, f.status) for f in before.files]
    assert accepted.kind == "fast-forward" and after.base == before.base and after.head == accepted.landed_head


def test_before_any_stage_is_recorded_the_review_says_so_and_every_stage_is_empty(
    app: CoordinatorApp, reviewable: Reviewable
) -> None:
    shown = call(app, GET, pb.GetReviewRequest(task_id=reviewable.task_id.value))

    assert isinstance(shown, pb.ReviewView) and shown.diff_identity == reviewable.identity
    assert not shown.checks and not shown.evidence and not shown.evidence_matches_diff
    assert shown.not_examined == ["no evidence bundle is recorded yet"]
    stages = call(app, STAGES, pb.ListStagesRequest(task_id=reviewable.task_id.value))
    assert isinstance(stages, pb.ListStagesReply) and stages.attempt == 1 and len(stages.stages) == 37
    assert all(s.outcome == "" and s.gate and s.phase for s in stages.stages)
    assert refusal(app, STAGES, pb.ListStagesRequest(task_id=reviewable.task_id.value, attempt=7))[0] == Code.NOT_FOUND


def test_accept_of_a_stale_identity_is_aborted_and_a_dirty_checkout_is_a_precondition(
    app: CoordinatorApp, reviewable: Reviewable, tmp_path: Path
) -> None:
    repo = tmp_path / "git" / "repo"
    head = git(repo, "rev-parse", "HEAD")
    stale = pb.AcceptChangeRequest(control=control("a-1"), task_id=reviewable.task_id.value, diff_identity="0" * 64)
    code, message = refusal(app, ACCEPT, stale)
    assert code == Code.ABORTED and "changed since it was reviewed" in message

    write_files(repo, {"pkg/extra.py": "VALUE = 2\n"})  # in the way of the task's new file
    fresh = pb.AcceptChangeRequest(control=control("a-2"), task_id=reviewable.task_id.value,
                                   diff_identity=reviewable.identity)
    code, message = refusal(app, ACCEPT, fresh)
    assert code == Code.FAILED_PRECONDITION and "pkg/extra.py" in message and str(tmp_path) not in message
    assert git(repo, "rev-parse", "HEAD") == head and (repo / "pkg/extra.py").read_text() == "VALUE = 2\n"
    assert reviewable.worktree.path.exists()


def test_a_conflict_is_a_reply_with_nothing_changed_and_a_retry_with_the_same_key_replays_it(
    app: CoordinatorApp, reviewable: Reviewable, tmp_path: Path
) -> None:
    repo = tmp_path / "git" / "repo"
    write_files(repo, {"pkg/calc.py": "def add(a, b):\n    return b + a  # theirs\n"})
    before = commit_all(repo, "a conflicting change")
    request = pb.AcceptChangeRequest(control=control("a-1"), task_id=reviewable.task_id.value,
                                     diff_identity=reviewable.identity)

    first = call(app, ACCEPT, request)
    again = call(app, ACCEPT, request)

    assert isinstance(first, pb.AcceptChangeReply) and first.kind == "conflict" and again == first
    assert list(first.conflicting_paths) == ["pkg/calc.py"] and first.task.state == "awaiting-review"
    assert git(repo, "rev-parse", "HEAD").strip() == before and git(repo, "status", "--porcelain") == ""
    other = pb.AcceptChangeRequest(control=control("a-1"), task_id=reviewable.task_id.value, diff_identity="1" * 64)
    assert refusal(app, ACCEPT, other)[0] == Code.ABORTED  # the same key with another request


def test_reject_keeps_the_patch_and_ends_the_task(app: CoordinatorApp, reviewable: Reviewable, db: Database,
                                                  tmp_path: Path) -> None:
    head = git(tmp_path / "git" / "repo", "rev-parse", "HEAD")

    view = call(app, REJECT, pb.RejectChangeRequest(control=control("r-1"), task_id=reviewable.task_id.value,
                                                    diff_identity=reviewable.identity, reason="not this way"))

    assert isinstance(view, pb.TaskView) and view.state == "cancelled"
    [patch] = TaskService(db, worktrees_root=tmp_path / "worktrees").patches(reviewable.task_id)
    assert patch.kind == "rejected" and patch.diff_identity == reviewable.identity and b"pkg/extra.py" in patch.patch
    assert git(tmp_path / "git" / "repo", "rev-parse", "HEAD") == head
    # the worktree is gone; the review shows the kept patch, saying so (issue 20 item 4)
    assert not reviewable.worktree.path.exists()
    kept = call(app, GET, pb.GetReviewRequest(task_id=reviewable.task_id.value))
    assert isinstance(kept, pb.ReviewView) and kept.diff_source == "kept-patch"
    assert kept.unified_diff.encode() == patch.patch and kept.diff_identity == reviewable.identity
    assert {(f.path, f.status) for f in kept.files} == {("pkg/calc.py", "modified"), ("pkg/extra.py", "added")}
    # The reason becomes a review convention of the repository, for later tasks' models (issue 19 item 1).
    [convention] = db.read(lambda view: list_memory_entries(view, kind=MemoryKind.CONVENTION))
    assert convention.body["origin"] == "review" and convention.body["statement"].endswith("because: not this way")
    assert reviewable.task_id.value in convention.text and not convention.sources
    block = memory_block(db, root=tmp_path / "git" / "repo", query="a later task")
    assert block is not None and "because: not this way" in block


def test_bad_input_is_refused_with_typed_statuses(app: CoordinatorApp, reviewable: Reviewable) -> None:
    task = reviewable.task_id.value
    unknown = "tsk_" + "0" * 32
    assert refusal(app, GET, pb.GetReviewRequest(task_id=unknown))[0] == Code.NOT_FOUND
    assert refusal(app, STAGES, pb.ListStagesRequest(task_id=unknown))[0] == Code.NOT_FOUND
    code, message = refusal(app, GET, pb.GetReviewRequest(task_id="../../etc/passwd"))
    assert code == Code.INVALID_ARGUMENT and "passwd" not in message
    assert refusal(app, ACCEPT, pb.AcceptChangeRequest(task_id=task, diff_identity=reviewable.identity))[0] == (
        Code.INVALID_ARGUMENT)  # no idempotency key
    assert refusal(app, ACCEPT, pb.AcceptChangeRequest(control=control("k"), task_id=task,
                                                       diff_identity="nothex"))[0] == Code.INVALID_ARGUMENT
    assert refusal(app, REJECT, pb.RejectChangeRequest(control=control("k"), task_id=unknown,
                                                       diff_identity=reviewable.identity))[0] == Code.NOT_FOUND
    for retry in (False, True):  # a reject needs a reason, with or without another attempt (issue 14 item 9)
        assert refusal(app, REJECT, pb.RejectChangeRequest(control=control(f"blank-{retry}"), task_id=task,
                                                           diff_identity=reviewable.identity, reason=" ",
                                                           retry=retry))[0] == Code.INVALID_ARGUMENT
    assert refusal(app, STAGES, pb.ListStagesRequest(task_id=task, attempt=-1))[0] == Code.INVALID_ARGUMENT


def test_files_that_change_what_runs_are_flagged_on_the_review_with_why(
    app: CoordinatorApp, reviewable: Reviewable, db: Database, tmp_path: Path
) -> None:
    changed: dict[str, str | bytes] = {
        "pkg/calc.py": "def add(a, b):\n    return b + a\n",
        "tests/conftest.py": "import socket\n",
        "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-p plugin'\n",
        "Makefile": "test:\n\tpython3 -m pytest\n",
        "make/rules.mk": "X = 1\n",
        "venv/lib/site-packages/zz.pth": "import os\n",
        ".gitattributes": "*.py filter=tidy\n",
        "docs/guide.md": "notes\n",
    }
    other = a_task_awaiting_review(TaskService(db, worktrees_root=tmp_path / "worktrees"),
                                   a_repository(tmp_path / "other"), changed)

    shown = call(app, GET, pb.GetReviewRequest(task_id=other.task_id.value))
    plain = call(app, GET, pb.GetReviewRequest(task_id=reviewable.task_id.value))

    assert isinstance(shown, pb.ReviewView) and isinstance(plain, pb.ReviewView)
    flags = {flag.path: flag.reason for flag in shown.changes_what_runs}
    assert set(flags) == {"tests/conftest.py", "pyproject.toml", "Makefile", "make/rules.mk",
                          "venv/lib/site-packages/zz.pth", ".gitattributes"}
    assert [f.path for f in shown.changes_what_runs] == sorted(flags)  # in the diff's (path) order
    assert "pytest" in flags["tests/conftest.py"] and "[tool.pytest" in flags["pyproject.toml"]
    assert "make" in flags["Makefile"] and "filter" in flags[".gitattributes"]
    assert "interpreter start" in flags["venv/lib/site-packages/zz.pth"]
    assert {f.path for f in shown.files} >= set(flags)
    assert not plain.changes_what_runs  # pkg/calc.py and pkg/extra.py change no command


def test_evidence_recorded_in_an_older_shape_is_still_shown_per_atom(
    app: CoordinatorApp, reviewable: Reviewable, db: Database, tmp_path: Path
) -> None:
    # An attempt as an older codeflux stored it: stage 15's atoms as bare names, a bundle with no per-atom section.
    tasks = TaskService(db, worktrees_root=tmp_path / "worktrees")
    held = [StageVerdict(stage=stage, outcome=StageOutcome.SATISFIED, gate_evaluation="held")
            for stage in (StageName.INSTRUCTIONS, StageName.CLARIFICATION, StageName.ATOMIC_INSTRUCTIONS)]
    contract = {"qualified_name": "pkg.calc.add", "path": "pkg/calc.py", "change": "changed", "lines": [1, 2],
                "signature": "def add(a, b)", "declared": None, "effects_inferred": []}
    tasks.record_stage_verdicts(reviewable.task_id, 1, [
        *held, StageVerdict(stage=StageName.CONTRACTS, outcome=StageOutcome.FAILED, gate_evaluation="1 finding"),
        StageVerdict(stage=StageName.ATOM_VERIFICATION, outcome=StageOutcome.SKIPPED, reason="no atom test"),
        StageVerdict(stage=StageName.ATOM_MUTATION, outcome=StageOutcome.SKIPPED, reason="no covering test"),
        StageVerdict(stage=StageName.ATOM_OPTIMIZATION, outcome=StageOutcome.SKIPPED, reason="no rewrite proposed"),
        StageVerdict(stage=StageName.EVIDENCE_BUNDLE, outcome=StageOutcome.SATISFIED, gate_evaluation="bundle"),
    ], evidence={StageName.CONTRACTS: {"atoms": [contract], "findings": [
                     "pkg.calc.add (pkg/calc.py:1) is public and no plan step declares it",
                     "pkg.calc.addition (pkg/calc.py:9) is public and no plan step declares it"]},
                 StageName.ATOM_OPTIMIZATION: {"atoms": ["pkg.calc.add", "pkg.calc.sub"], "rewrites": []},
                 StageName.EVIDENCE_BUNDLE: {"diff_identity": reviewable.identity, "claims": []}})

    shown = call(app, EVIDENCE, pb.GetEvidenceRequest(task_id=reviewable.task_id.value))

    assert isinstance(shown, pb.EvidenceView) and shown.source == "ledger" and shown.attempt == 1
    assert shown.diff_identity == reviewable.identity and shown.atom_count == 2
    add, sub = shown.atoms
    assert (add.qualified_name, add.path, add.first_line, add.last_line, add.change) == (
        "pkg.calc.add", "pkg/calc.py", 1, 2, "changed")
    contracts = add.stages[0]
    assert (contracts.number, contracts.outcome, contracts.measured) == (5, "failed", True)
    assert contracts.summary.startswith("not declared by any plan step; written `def add(a, b)`")
    # an entry recorded before stage 5 listed findings per atom: the stage's findings that name this atom
    assert list(contracts.findings) == ["pkg.calc.add (pkg/calc.py:1) is public and no plan step declares it"]
    by_stage = {item.stage: item for item in sub.stages}
    assert (sub.path, sub.first_line) == ("", 0)  # nothing recorded its place: none is made up
    assert by_stage["contracts"].not_measured == ("not measured (stage 5 failed, but its evidence does not list this "
                                                  "atom)")
    assert by_stage["atom-optimization"].not_measured == "not measured (stage 15 skipped: no rewrite proposed)"
    assert by_stage["atom-mutation"].not_measured == "not measured (stage 13 skipped: no covering test)"
    assert [stage.number for stage in shown.stages] == list(range(1, 38))
    review = call(app, GET, pb.GetReviewRequest(task_id=reviewable.task_id.value))
    assert isinstance(review, pb.ReviewView) and list(review.atoms) == list(shown.atoms)


def test_surviving_mutants_and_findings_sit_on_their_lines_of_the_review(
    app: CoordinatorApp, reviewable: Reviewable, db: Database, tmp_path: Path
) -> None:
    # Issue 20 item 4: evidence beyond obligations and uncovered arcs anchored to the diff's lines.
    tasks = TaskService(db, worktrees_root=tmp_path / "worktrees")
    mutant = {"operator": "binop", "line": 2, "original": "+", "replacement": "-", "uncovered": False, "diff": ""}
    stages = list(StageName)
    held = [StageVerdict(stage=stage, outcome=StageOutcome.SATISFIED, gate_evaluation="held")
            for stage in stages[:stages.index(StageName.ATOM_MUTATION)]]
    tasks.record_stage_verdicts(reviewable.task_id, 1, [
        *held, StageVerdict(stage=StageName.ATOM_MUTATION, outcome=StageOutcome.FAILED, gate_evaluation="1 survived"),
        StageVerdict(stage=StageName.ANTI_PATTERNS, outcome=StageOutcome.FAILED, gate_evaluation="2 findings"),
    ], evidence={StageName.ATOM_MUTATION: {"atoms": [{"atom": "pkg.calc.add", "path": "pkg/calc.py",
                                                      "surviving": [mutant]}]},
                 StageName.ANTI_PATTERNS: {"findings": ["pkg/calc.py:6 E711 comparison to None",
                                                        "elsewhere.py:3 E711 not in this diff"]}})

    shown = call(app, GET, pb.GetReviewRequest(task_id=reviewable.task_id.value))

    assert isinstance(shown, pb.ReviewView)
    assert [(n.path, n.line, n.kind, n.text) for n in shown.line_notes] == [
        ("pkg/calc.py", 2, "surviving-mutant", "surviving mutant of pkg.calc.add (binop: + → -): no test failed "
                                               "(stage 13)"),
        ("pkg/calc.py", 6, "finding", "finding of anti-patterns: E711 comparison to None")]
