"""The stage catalog: 37 stages in 7 phases, each with its gate, prerequisites and abilities.

A stage's **name is its identity** (:class:`StageName`); the number only orders (the ledger stores
both). Each :class:`Stage` says:

* ``gate`` — what must hold for the stage to count as ``satisfied``. For a stage codeflux performs today
  the gate states exactly what is checked, never more (a gate that claims more than its check is the
  reference's over-claiming we avoid).
* ``prerequisites`` — earlier stages whose gate must have held. A stage whose prerequisite failed or was
  blocked is itself blocked (see :mod:`codeflux.domain.pipeline.outcomes`). Every edge points to a
  lower number, and every stage is reachable from ``instructions``.
* ``sends_back`` — a failure returns the work to the implementation loop (possibly on a higher rung of
  the ladder) instead of ending the run: ``atom-verification``, ``assembly``, ``integration-tests``,
  ``end-to-end-tests``, ``adversarial`` (ARCHITECTURE §8.3).
* ``performable`` — codeflux can evaluate the gate today. Every other stage is recorded honestly as
  ``not-implemented``, and may never be recorded ``satisfied``, ``failed`` or ``skipped``.

* ``after`` — order-only edges: earlier stages this one comes after whose failure does **not** block it.

The order inside a phase is an argument, and the edges encode it (:func:`transitive_order`): test cases come
from the contract, not the implementation; tests exist before the thing they test; anti-pattern detection
comes after verification; optimization only after mutation scoring; documentation last. In phase B most of
those edges are order only: stages 5, 8, 9, 10, 13 and 14 may fail without stopping the run, and their
findings join the context of an attempt a send-back gate starts (issue 17) — so a missing declaration (5) or a
weak test (8) must not block atom verification (11, which sends back) or the static checks after it. A
prerequisite stays hard where the later stage consumes what the earlier one measured: 6 recall reuses units
with 5's contracts, 13 scores mutants against the tests 11 verified, 15 compares with 13's score.

``evidence-bundle`` depends only on ``instructions`` and ``atomic-instructions``, not on the checks
before it holding: the bundle is where failed and unexamined checks are reported, so it must be built
precisely when they did not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from codeflux.domain.errors import InvalidValueError

__all__ = [
    "GATING_STAGES",
    "PERFORMABLE_STAGES",
    "SEND_BACK_STAGES",
    "STAGES",
    "PipelinePhase",
    "Stage",
    "StageName",
    "stage_named",
    "transitive_order",
    "transitive_prerequisites",
]


class PipelinePhase(StrEnum):
    """The seven phases, stored and shown by letter; :attr:`label` is the phase's name."""

    SPECIFICATION = "A"
    ATOMS = "B"
    MOLECULES = "C"
    CONTROL_FLOW = "D"
    PROGRAM = "E"
    VERIFICATION_DEPTH = "F"
    DELIVERY = "G"

    @property
    def label(self) -> str:
        """The phase's name as people read it (``Specification``, ``Verification depth``)."""
        return self.name.replace("_", " ").capitalize()


class StageName(StrEnum):
    """The identity of each stage, in stage-number order."""

    INSTRUCTIONS = "instructions"
    CLARIFICATION = "clarification"
    ATOMIC_INSTRUCTIONS = "atomic-instructions"
    DECOMPOSITION_COVERAGE = "decomposition-coverage"
    CONTRACTS = "contracts"
    RECALL = "recall"
    ATOM_CASE_SYNTHESIS = "atom-case-synthesis"
    ATOM_EXAMPLE_TESTS = "atom-example-tests"
    ATOM_PROPERTY_TESTS = "atom-property-tests"
    ATOMS = "atoms"
    ATOM_VERIFICATION = "atom-verification"
    ATOM_FUZZ = "atom-fuzz"
    ATOM_MUTATION = "atom-mutation"
    ANTI_PATTERNS = "anti-patterns"
    ATOM_OPTIMIZATION = "atom-optimization"
    ATOM_COMPLEXITY = "atom-complexity"
    ATOM_DOCUMENTATION = "atom-documentation"
    COMPOSITION_OBLIGATIONS = "composition-obligations"
    MOLECULE_TESTS = "molecule-tests"
    MOLECULES = "molecules"
    MOLECULE_VERIFICATION = "molecule-verification"
    CONTROL_OBLIGATIONS = "control-obligations"
    CONTROL_TESTS = "control-tests"
    CONTROL_FLOW = "control-flow"
    PATH_COVERAGE = "path-coverage"
    ASSEMBLY = "assembly"
    PROGRAM = "program"
    INTEGRATION_TESTS = "integration-tests"
    END_TO_END_TESTS = "end-to-end-tests"
    GLOBAL_INVARIANTS = "global-invariants"
    ADVERSARIAL = "adversarial"
    REPETITION = "repetition"
    PLATFORM_MATRIX = "platform-matrix"
    NON_FUNCTIONAL = "non-functional"
    EVIDENCE_BUNDLE = "evidence-bundle"
    HUMAN_ACCEPTANCE = "human-acceptance"
    DELIVER = "deliver"


@dataclass(frozen=True, slots=True, kw_only=True)
class Stage:
    """One declared stage of the pipeline."""

    number: int
    name: StageName
    phase: PipelinePhase
    gate: str
    prerequisites: tuple[StageName, ...]
    sends_back: bool
    performable: bool
    after: tuple[StageName, ...] = ()
    """Order-only edges: stages this one comes after whose *failure* does not block it (their findings are
    listed with the run; see the module docstring). A stage of ``after`` that is ``blocked`` is only order too."""


_N = StageName
_P = PipelinePhase


def _stage(
    number: int,
    name: StageName,
    phase: PipelinePhase,
    gate: str,
    *prerequisites: StageName,
    sends_back: bool = False,
    performable: bool = False,
    after: tuple[StageName, ...] = (),
) -> Stage:
    return Stage(
        number=number,
        name=name,
        phase=phase,
        gate=gate,
        prerequisites=prerequisites,
        sends_back=sends_back,
        performable=performable,
        after=after,
    )


STAGES: Final[tuple[Stage, ...]] = (
    # A Specification
    _stage(1, _N.INSTRUCTIONS, _P.SPECIFICATION,
           "At least one executable acceptance example (a named test, or a command with its expected output) "
           "comes from the person's ACCEPTANCE blocks, else from the plan revision the person approved.",
           performable=True),
    _stage(2, _N.CLARIFICATION, _P.SPECIFICATION,
           "The deterministic clarification checks ran on the approved plan (every path or identifier the "
           "requirement names explicitly exists at the base revision or a step creates it; no two acceptance "
           "examples run the same command expecting different output), and each of their findings and the "
           "planner's own questions was answered by the person or stated as an assumption (policy assume). "
           "Whether the requirement's meaning is ambiguous is not judged.",
           _N.INSTRUCTIONS, performable=True),
    _stage(3, _N.ATOMIC_INSTRUCTIONS, _P.SPECIFICATION,
           "A plan splits the requirement into distinct single-purpose steps, each with the part of the "
           "requirement it serves; the files a step names are the planner's hint, not required.",
           _N.CLARIFICATION, performable=True),
    _stage(4, _N.DECOMPOSITION_COVERAGE, _P.SPECIFICATION,
           "The approved plan's trace maps every acceptance example to at least one step; requirement sentences "
           "no step names are listed. Only completeness is checked: whether a step really serves what it "
           "names is not judged.",
           _N.INSTRUCTIONS, _N.ATOMIC_INSTRUCTIONS, performable=True),
    _stage(5, _N.CONTRACTS, _P.SPECIFICATION,
           "Every public function or method the diff adds or changes outside tests is declared in a step of the "
           "approved plan (name, signature, effects), annotates every parameter and its return, and shows no "
           "effect in its syntax tree (file, network, process, env, global state, clock, randomness) beyond the "
           "declared ones; private helpers are listed, not failed, and pre- and postconditions are not checked.",
           _N.ATOMIC_INSTRUCTIONS, performable=True),
    _stage(6, _N.RECALL, _P.SPECIFICATION,
           "For each atom the approved plan declares, memory is asked for a verified atom of this repository with "
           "the same contract (signature and effects) that is applicable now (same repository, toolchain and "
           "dependencies, its file unchanged in the person's checkout); each is recorded as reuse, naming the entry "
           "(this run verifies it again: phase B where the diff touches it, the suite either way), or write, with "
           "why nothing was reusable. Similarity never counts: a name alone is not a contract.",
           _N.CONTRACTS, performable=True),
    # B Atoms
    _stage(7, _N.ATOM_CASE_SYNTHESIS, _P.ATOMS,
           "For each parameter of each atom, a ladder of input rungs (typical, degenerate/empty, boundary, large, "
           "wrong-type, pathological, as far as its type has them) is derived from its contract — the approved "
           "plan's declared annotation, else the code's, else a literal default — by codeflux's fixed "
           "classification rules, with examples of each rung drawn in the task's box by Hypothesis with a recorded "
           "seed (from_type of the atom's resolved annotation for typical, codeflux's strategies for the others; "
           "codeflux's fixed examples where Hypothesis is missing); and every rung is exercised by at least one of "
           "the repository's tests that execute the atom: the arguments those tests pass to it are recorded and "
           "classified in the task's box (the examples are never run and never count); unexercised rungs are "
           "listed. Not checked: what the tests assert about the result on a rung.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.CONTRACTS,), performable=True),
    _stage(8, _N.ATOM_EXAMPLE_TESTS, _P.ATOMS,
           "Every atom (a function or method the diff adds or changes, outside tests) has its body executed by at "
           "least one of the repository's passing tests (coverage.py, one context per test), and at least one of "
           "those tests fails when the atom's body is replaced by `raise NotImplementedError` in a scratch copy of "
           "the final tree; covering tests that still pass against the stub are named. Not checked: that the "
           "tests were written before the body, or that they assert the atom's result.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.ATOM_CASE_SYNTHESIS,), performable=True),
    _stage(9, _N.ATOM_PROPERTY_TESTS, _P.ATOMS,
           "Every atom taking variable data (a parameter other than self/cls) is reached by at least one test "
           "decorated with Hypothesis's `given` (found in the test files' syntax trees): the coverage map shows that "
           "test executing the atom's body. Skipped when the repository does not declare Hypothesis as a "
           "dependency. Not checked: what the property asserts, or how good its strategies are.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.CONTRACTS,), performable=True),
    _stage(10, _N.ATOMS, _P.ATOMS,
           "Every atom the approved plan declares pure (no effects) has no global or nonlocal statement, reads no "
           "module-level mutable name and shows no effect in its syntax tree; state reached through calls into "
           "other functions is not followed.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.ATOM_EXAMPLE_TESTS, _N.ATOM_PROPERTY_TESTS), performable=True),
    _stage(11, _N.ATOM_VERIFICATION, _P.ATOMS,
           "The tests that executed an atom's body and passed in the coverage run (coverage.py, one context per "
           "test, file order) pass in each of N runs "
           "(default 3, a setting), each in a random order drawn from a recorded seed that also seeds `random` "
           "and, where Hypothesis is installed, Hypothesis; every seed, its order and its outcomes are listed, a "
           "failing seed with the exact command that replays it, and a test failing under one seed but passing "
           "under another is named flaky. Not checked: other orders or seeds than the ones run, or what the tests "
           "assert.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.ATOM_EXAMPLE_TESTS, _N.ATOM_PROPERTY_TESTS, _N.ATOMS), sends_back=True,
           performable=True),
    _stage(12, _N.ATOM_FUZZ, _P.ATOMS,
           "Each atom taking text, bytes, a path or JSON, or named to parse, decode, load or read, is fuzzed with "
           "Hypothesis in the task's box for its time budget (default 20 s per atom, a setting) from one recorded "
           "seed, and raises nothing but the exceptions its docstring documents (or their subclasses) and never "
           "runs past the per-input deadline; a failing input is kept with its exception and the command that "
           "replays it. Not proven: that other inputs, seeds or a longer budget find nothing; return values are "
           "not judged.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.ATOMS,), performable=True),
    _stage(13, _N.ATOM_MUTATION, _P.ATOMS,
           "For every atom, at least the configured share (default 70 %) of the mutants codeflux makes with libcst on "
           "the lines the diff adds or rewrites (arithmetic, comparison, boolean, constant, return-value and "
           "removed-call operators) is killed — a test that executes the mutated line fails or hangs — in a scratch "
           "copy of the final tree, the mutants switched in one process; each surviving mutant is listed with its "
           "diff. Not proven: that the tests are right, only that they notice these changes; an equivalent mutant "
           "counts as surviving.",
           _N.ATOM_VERIFICATION, performable=True),
    _stage(14, _N.ANTI_PATTERNS, _P.ATOMS,
           "On the lines the diff adds or rewrites in Python files outside the tests, codeflux's own ruff "
           "(the repository's configuration and noqa comments ignored) reports none of a fixed rule set — "
           "blind or bare except, try-except-pass, mutable default, global statement, missing parameter or return "
           "annotation, boolean flag argument, shadowed builtin, overwritten loop variable, cyclomatic "
           "complexity above 10 — and codeflux's syntax-tree checks find no exit call outside a main block, no "
           "assert and no block nested more than 5 deep in a function. Untouched lines are not judged.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.ATOM_VERIFICATION,), performable=True),
    _stage(15, _N.ATOM_OPTIMIZATION, _P.ATOMS,
           "A simpler rewrite of an atom is kept only when a differential test over generated inputs shows it "
           "agrees with the original; no rewrite is proposed yet, so the stage records that none was.",
           _N.ATOM_MUTATION, performable=True),
    _stage(16, _N.ATOM_COMPLEXITY, _P.ATOMS,
           "The cyclomatic complexity radon counts for each atom, and for each function nested in it, is at most "
           "the configured limit (default 10). Advisory, never part of the gate: atoms with a sized input are "
           "timed at three sizes in the task's box and the fitted log-log exponent is listed (wall-clock, not a "
           "complexity proof).",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.ATOM_OPTIMIZATION,), performable=True),
    _stage(17, _N.ATOM_DOCUMENTATION, _P.ATOMS,
           "Advisory: the docstring of each public atom was read, and a missing purpose line, parameters "
           "documented unlike the signature, and missing returns or raises sections are listed as findings "
           "(the stage records satisfied with them). Whether a docstring is true is not judged.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.ATOM_VERIFICATION, _N.ATOM_FUZZ, _N.ATOM_MUTATION, _N.ANTI_PATTERNS,
                                          _N.ATOM_OPTIMIZATION, _N.ATOM_COMPLEXITY), performable=True),
    # C Molecules
    _stage(18, _N.COMPOSITION_OBLIGATIONS, _P.MOLECULES,
           "Recording: for every atom that calls another atom of the diff — resolved by name in its syntax tree (same "
           "module, imported names and modules, self/cls and its class) — one composition obligation (caller -> "
           "callee, with its call sites) is stored open in the obligations table. Calls through values (a callable "
           "passed in, getattr, another class's instance) are not resolved.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.ATOM_DOCUMENTATION,), performable=True),
    _stage(19, _N.MOLECULE_TESTS, _P.MOLECULES,
           "Every composition obligation has a molecule test — one whose coverage context executed both the caller's "
           "body and the real callee's body (a mocked callee is never executed) — and at least one of them passed in "
           "the coverage run and fails when the caller's body is replaced by `raise NotImplementedError` in a scratch "
           "copy of the final tree; compositions without such a test are named. Not checked: "
           "what the tests assert about the composition's result.",
           _N.COMPOSITION_OBLIGATIONS, performable=True),
    _stage(20, _N.MOLECULES, _P.MOLECULES,
           "Every molecule test (a test executing both a composition's caller and its real callee) passed in the "
           "coverage run; each one that did not is named with its composition.",
           _N.COMPOSITION_OBLIGATIONS, after=(_N.MOLECULE_TESTS,), performable=True),
    _stage(21, _N.MOLECULE_VERIFICATION, _P.MOLECULES,
           "Every composition obligation is discharged (stored discharged by molecule-verification, with the tests): "
           "a molecule test of it passed in the coverage run and failed against the caller's stub; the open ones "
           "are named.",
           _N.COMPOSITION_OBLIGATIONS, after=(_N.MOLECULE_TESTS, _N.MOLECULES), performable=True),
    # D Control flow
    _stage(22, _N.CONTROL_OBLIGATIONS, _P.CONTROL_FLOW,
           "Recording: every branch arc coverage.py's analysis finds leaving a line the diff adds or rewrites inside "
           "an atom (taken or not, from the attempt's one coverage run with branch data) is stored as one open "
           "control-path obligation named file:line->line. Arcs on unchanged lines or outside atoms are not recorded.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.MOLECULE_VERIFICATION,), performable=True),
    _stage(23, _N.CONTROL_TESTS, _P.CONTROL_FLOW,
           "Every control-path obligation's arc was taken by at least one test, read from the coverage run's "
           "per-test contexts (each arc listed with its tests, whatever their outcome); arcs no test took are named. "
           "Not checked: what the tests assert on that path.",
           _N.CONTROL_OBLIGATIONS, performable=True),
    _stage(24, _N.CONTROL_FLOW, _P.CONTROL_FLOW,
           "Every control-path obligation is discharged: its arc was taken by a test that passed in the coverage run "
           "(the obligation stored discharged by control-flow, with those tests); the others stay open and are "
           "named, and one the attempt before discharged is marked regressed. Combinations of arcs (paths) are not "
           "counted.",
           _N.CONTROL_OBLIGATIONS, after=(_N.CONTROL_TESTS,), performable=True),
    _stage(25, _N.PATH_COVERAGE, _P.CONTROL_FLOW,
           "Branch coverage (not statement coverage) of the lines the diff adds or rewrites inside atoms — branch "
           "arcs taken in the coverage run ÷ branch arcs leaving those lines — is at least the configured share "
           "(default 90 %, a setting); every arc not taken is listed as file:line->line.",
           _N.ATOMIC_INSTRUCTIONS, after=(_N.CONTROL_FLOW,), performable=True),
    # E Program
    _stage(26, _N.ASSEMBLY, _P.PROGRAM,
           "The changed package compiles and imports in the task worktree before anything else runs.",
           _N.ATOMIC_INSTRUCTIONS, sends_back=True, performable=True),
    _stage(27, _N.PROGRAM, _P.PROGRAM,
           "A runnable program or installable build is produced from the worktree.",
           _N.ASSEMBLY, performable=True),
    _stage(28, _N.INTEGRATION_TESTS, _P.PROGRAM,
           "The repository's detected test command (pytest with junit XML) runs on this diff and every "
           "collected test passes.",
           _N.ASSEMBLY, sends_back=True, performable=True),
    _stage(29, _N.END_TO_END_TESTS, _P.PROGRAM,
           "Every acceptance example is reproduced exactly on this diff: each named test exists and passes in the "
           "test run, each command exits 0 with exactly the expected output lines.",
           _N.INSTRUCTIONS, _N.ASSEMBLY, sends_back=True, performable=True),
    # F Verification depth
    _stage(30, _N.GLOBAL_INVARIANTS, _P.VERIFICATION_DEPTH,
           "The capabilities the changed non-test code reaches in its syntax tree (network, process, file outside "
           "the package, env by stage 5's effect table; eval/exec/compile, unsafe deserialisation such as pickle, "
           "marshal or yaml.load; imports of such modules on changed lines) are all among the plan's declared "
           "effects, and bandit reports no high-severity finding on a changed line; calls into other functions are "
           "not followed.",
           _N.ASSEMBLY, performable=True),
    _stage(31, _N.ADVERSARIAL, _P.VERIFICATION_DEPTH,
           "Each command acceptance example, and each console entry point or package __main__ the change touches, "
           "run confined in a scratch copy on seven hostile inputs (no stdin, empty, random bytes, invalid UTF-8, "
           "NUL, a 10 MiB line, a missing file argument) with a canary secret in its environment, ends within the "
           "time limit, prints no uncaught traceback and never the canary, and does not exit 0 when a file its "
           "example reads is missing. Not proven: that an exit 0 on other garbage is wrong, or anything about "
           "other inputs or commands.",
           _N.ASSEMBLY, sends_back=True, performable=True),
    _stage(32, _N.REPETITION, _P.VERIFICATION_DEPTH,
           "The whole test suite, run N times (a setting, default 3) in random orders from recorded seeds in the "
           "task's box, passes the same tests in every run and in file order (stage 28); a test that fails under a "
           "seed is named with that seed and the argv that reproduces it. Other orders are not claimed.",
           _N.INTEGRATION_TESTS, performable=True),
    _stage(33, _N.PLATFORM_MATRIX, _P.VERIFICATION_DEPTH,
           "The suite passes with every other local environment (.venv-*, tox, nox) that has pytest, and every "
           "changed Python file parses under the grammar of every other Python version pyproject.toml declares; "
           "versions not run are listed as claimed, not run (syntax-checked or unchecked), and their API use is "
           "not checked.",
           _N.ASSEMBLY, after=(_N.INTEGRATION_TESTS,), performable=True),
    _stage(34, _N.NON_FUNCTIONAL, _P.VERIFICATION_DEPTH,
           "Advisory: the suite's median wall time with the change, from stage 32's runs, against as many runs on "
           "the base revision interleaved in the same pipeline run, stays within max(ratio × base, base + slack) "
           "(settings, default 150 % and 500 ms); a slower change is flagged with both times.",
           _N.INTEGRATION_TESTS, after=(_N.REPETITION,), performable=True),
    # G Delivery
    _stage(35, _N.EVIDENCE_BUNDLE, _P.DELIVERY,
           "Every claim links to its evidence: what ran, on which diff identity, with what result, and "
           "what was not examined.",
           _N.INSTRUCTIONS, _N.ATOMIC_INSTRUCTIONS, performable=True),
    _stage(36, _N.HUMAN_ACCEPTANCE, _P.DELIVERY,
           "A person accepted, rejected or asked for changes to this exact diff, having seen its evidence.",
           _N.EVIDENCE_BUNDLE, performable=True),
    _stage(37, _N.DELIVER, _P.DELIVERY,
           "The accepted change landed on the user's branch, with its evidence and provenance recorded.",
           _N.EVIDENCE_BUNDLE, _N.HUMAN_ACCEPTANCE, performable=True),
)  # fmt: skip
"""The 37 stages in number order."""

_BY_NAME: Final[Mapping[str, Stage]] = MappingProxyType({stage.name.value: stage for stage in STAGES})

SEND_BACK_STAGES: Final = frozenset(stage.name for stage in STAGES if stage.sends_back)
"""The gates whose failure returns work to the implementation loop."""

GATING_STAGES: Final = SEND_BACK_STAGES | {_N.ASSEMBLY, _N.INTEGRATION_TESTS, _N.END_TO_END_TESTS}
"""The stages whose failure decides a run's exit code (§8.2): 26, 28, 29 and the send-back gates. Every other
stage is advisory: its findings are listed, it never fails the run."""

PERFORMABLE_STAGES: Final = frozenset(stage.name for stage in STAGES if stage.performable)
"""The stages codeflux evaluates today; every other one is recorded ``not-implemented``."""


def stage_named(name: str) -> Stage:
    """The stage whose identity is ``name``; :class:`InvalidValueError` for any other text."""
    stage = _BY_NAME.get(name)
    if stage is None:
        raise InvalidValueError(kind="pipeline stage", reason=f"no stage is named {name!r}")
    return stage


def transitive_order(name: StageName) -> frozenset[StageName]:
    """Every stage ``name`` comes after, through prerequisites and order-only edges (the order argument)."""
    found: set[StageName] = set()
    pending = [*stage_named(name).prerequisites, *stage_named(name).after]
    while pending:
        earlier = pending.pop()
        if earlier not in found:
            found.add(earlier)
            pending.extend((*stage_named(earlier).prerequisites, *stage_named(earlier).after))
    return frozenset(found)


def transitive_prerequisites(name: StageName) -> frozenset[StageName]:
    """Every stage that must have held, directly or through another prerequisite, before ``name`` runs."""
    found: set[StageName] = set()
    pending = list(stage_named(name).prerequisites)
    while pending:
        prerequisite = pending.pop()
        if prerequisite not in found:
            found.add(prerequisite)
            pending.extend(stage_named(prerequisite).prerequisites)
    return frozenset(found)
