"""Phase E: 26 assembly.

**assembly** verifies the task worktree (its binding to repository, branch and base), takes the diff
against the base (untracked files included) and its identity, and compiles every added or changed
Python file with codeflux's own interpreter — ``compile()`` parses and compiles, it never executes the
repository's code. Then it imports every changed module in the task's box with the repository's environment
(:mod:`codeflux.pipeline.imports`): a module that does not import — an unresolvable import, an error at
import time — fails the gate and sends the work back; when the import check could not run, the evidence and
the gate's text say so.
"""

from __future__ import annotations

from codeflux.domain.errors import CodefluxError
from codeflux.domain.pipeline import StageName, StageOutcome
from codeflux.gitwork.diff import FileChangeKind, diff_against_base
from codeflux.gitwork.task_worktree import verify_task_worktree
from codeflux.pipeline.imports import changed_modules, check_imports, failing_on_base_too
from codeflux.pipeline.ports import PipelinePorts
from codeflux.pipeline.program import detect_test_command
from codeflux.pipeline.specification import StageResult, stage_result

__all__ = ["evaluate_assembly"]


def evaluate_assembly(ports: PipelinePorts, *, attempt: int) -> StageResult:
    """Stage 26 (see the module docstring). A worktree that does not verify fails the gate."""
    worktree = ports.facts.worktree
    try:
        verify_task_worktree(worktree)
        diff = diff_against_base(worktree)
    except CodefluxError as error:
        return stage_result(StageName.ASSEMBLY, StageOutcome.FAILED, f"the task worktree does not verify: {error}",
                        {"worktree": str(worktree.path)})
    compiled: list[str] = []
    errors: list[dict[str, object]] = []
    for change in diff.files:
        if change.kind is FileChangeKind.DELETED or change.binary or not change.path.endswith(".py"):
            continue
        path = worktree.path / change.path
        if path.is_symlink() or not path.is_file():
            errors.append({"path": change.path, "problem": "not a regular file"})
            continue
        try:
            compile(path.read_bytes(), change.path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:
            errors.append({"path": change.path, "problem": type(error).__name__,
                           "line": getattr(error, "lineno", None), "message": str(getattr(error, "msg", ""))[:200]})
            continue
        compiled.append(change.path)
    files: list[dict[str, object]] = [{"path": f.path, "kind": f.kind.value, "additions": f.additions,
                                       "deletions": f.deletions} for f in diff.files]
    evidence: dict[str, object] = {
        "diff_identity": diff.identity, "base": diff.base, "head": diff.head, "files": files,
        "compiled": compiled, "compile_errors": errors, "skipped_paths": list(diff.skipped_paths),
    }
    if diff.is_empty:
        return stage_result(StageName.ASSEMBLY, StageOutcome.FAILED, "the worktree verifies but the diff is empty",
                        evidence)
    seen = (f"worktree verified; diff {diff.identity[:12]} changes {len(diff.files)} file(s); "
            f"{len(compiled)} changed Python file(s) compile")
    if errors:
        return stage_result(StageName.ASSEMBLY, StageOutcome.FAILED, seen + f"; {len(errors)} do not", evidence)
    command = detect_test_command(worktree=worktree.path, repository_root=ports.repository_root,
                                  search_path=ports.search_path)
    if command is None or command.pytest_missing:
        imports = check_imports(ports, attempt=attempt, modules=changed_modules(files, worktree.path),
                                interpreter=None, test_argv=None)
        evidence["imports"] = imports.to_evidence()
        return stage_result(StageName.ASSEMBLY, StageOutcome.SATISFIED, f"{seen}; {imports.detail}", evidence)
    imports = check_imports(ports, attempt=attempt, modules=changed_modules(files, worktree.path),
                            interpreter=command.interpreter, test_argv=command.argv)
    existing = changed_modules([item for item in files if item["kind"] == "modified"], worktree.path)
    excused = failing_on_base_too(ports, attempt=attempt, check=imports, interpreter=command.interpreter,
                                  test_argv=command.argv, existing=existing) if imports.failures else ()
    evidence["imports"] = {**imports.to_evidence(), "failing_on_base_too": list(excused)}
    seen += f"; {imports.detail}"
    new = [failure for failure in imports.failures if failure.get("module") not in excused]
    if excused:
        seen += f"; {len(excused)} fail to import on the base revision too (not caused by this change)"
    if new:
        shown = "; ".join(f"{f.get('module')}: {f.get('type')}: {f.get('message')} ({f.get('file')}:{f.get('line')})"
                          for f in new[:5])
        return stage_result(StageName.ASSEMBLY, StageOutcome.FAILED, f"{seen} — {shown}", evidence)
    return stage_result(StageName.ASSEMBLY, StageOutcome.SATISFIED, seen, evidence)
