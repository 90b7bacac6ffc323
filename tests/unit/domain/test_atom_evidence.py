"""The evidence bundle's per-atom section (issue 17): each atom stage's entry for each atom, read generically
from the stage's ``atoms`` list, or why the stage measured nothing of it — never an invented value."""

from __future__ import annotations

from codeflux.domain.pipeline import StageName, StageOutcome, StageVerdict
from codeflux.domain.pipeline.atom_evidence import ATOM_STAGE_MEASURES, atom_evidence

N = StageName
ADD = {"qualified_name": "calc.ops.add", "path": "calc/ops.py", "change": "changed", "lines": [4, 6]}


def ran(stage: StageName, outcome: StageOutcome = StageOutcome.SATISFIED) -> StageVerdict:
    # as a ledger row reads back: stages 8, 11 and 13 are performed by newer codeflux than this test may run on
    return StageVerdict.as_recorded(stage=stage, outcome=outcome, gate_evaluation="checked", reason=None)


def not_run(stage: StageName, outcome: StageOutcome, reason: str) -> StageVerdict:
    return StageVerdict.as_recorded(stage=stage, outcome=outcome, gate_evaluation=None, reason=reason)


def items(section: dict[str, object], name: str = "calc.ops.add") -> dict[str, dict[str, object]]:
    atoms = section["atoms"]
    assert isinstance(atoms, list)
    (atom,) = [atom for atom in atoms if atom["qualified_name"] == name]
    return {item["stage"]: item for item in atom["evidence"]}


def test_a_stage_s_entries_are_picked_up_by_atom_whatever_keys_they_carry() -> None:
    # stage 8 names its atom under "atom" and its one finding under "finding"; its other keys are facts
    example_tests = {"atom": "calc.ops.add", "path": "calc/ops.py", "lines": [4, 6], "tests": ["t::a", "t::b"],
                     "failed_against_stub": ["t::a"], "passed_against_stub": ["t::b"],
                     "finding": "t::b does not test this atom"}
    section = atom_evidence([ran(N.CONTRACTS), ran(N.ATOM_EXAMPLE_TESTS, StageOutcome.FAILED)],
                            {N.CONTRACTS: {"atoms": [ADD]}, N.ATOM_EXAMPLE_TESTS: {"atoms": [example_tests]}})

    found = items(section)["atom-example-tests"]

    assert found["measured"] is True and found["outcome"] == "failed"
    assert found["summary"] == "2 covering test(s); against a stub: 1 failed, 1 still passed"
    assert found["findings"] == ["t::b does not test this atom"]
    assert found["facts"] == {"tests": ["t::a", "t::b"], "failed_against_stub": ["t::a"],
                              "passed_against_stub": ["t::b"]}
    (atom,) = section["atoms"]  # type: ignore[misc]
    assert (atom["path"], atom["lines"], atom["change"]) == ("calc/ops.py", [4, 6], "changed")


def test_a_stage_that_did_not_measure_the_atom_says_why_in_words() -> None:
    verdicts = [ran(N.CONTRACTS), not_run(N.ATOM_MUTATION, StageOutcome.NOT_IMPLEMENTED, "cannot yet"),
                not_run(N.ATOM_VERIFICATION, StageOutcome.BLOCKED, "pytest-randomly is missing"),
                not_run(N.ATOMS, StageOutcome.SKIPPED, "none declared pure"), ran(N.ATOM_DOCUMENTATION),
                ran(N.ANTI_PATTERNS)]
    evidence = {N.CONTRACTS: {"atoms": [ADD]}, N.ATOM_DOCUMENTATION: {"atoms": [], "not_checked": {
        "calc.ops.add": "private"}}, N.ANTI_PATTERNS: {"atoms": []}}

    found = items(atom_evidence(verdicts, evidence))

    assert found["atom-mutation"]["not_measured"] == "not measured (stage 13 not-implemented: cannot yet)"
    assert found["atom-verification"]["not_measured"] == ("not measured (stage 11 blocked: pytest-randomly is "
                                                          "missing)")
    assert found["atoms"]["not_measured"] == "not measured (stage 10 skipped: none declared pure)"
    assert found["atom-documentation"]["not_measured"] == "not measured (stage 17 satisfied; for this atom: private)"
    assert found["anti-patterns"]["not_measured"] == ("not measured (stage 14 satisfied, but its evidence does not "
                                                      "list this atom)")
    assert found["atom-fuzz"]["not_measured"] == "not measured (stage 12 not recorded in this attempt)"
    assert all(item["facts"] == {} and item["findings"] == [] for item in found.values() if not item["measured"])
    assert list(found) == [stage.value for stage in ATOM_STAGE_MEASURES]


def test_files_whose_atoms_could_not_be_listed_are_named_with_the_reason() -> None:
    section = atom_evidence([ran(N.CONTRACTS), ran(N.ATOM_COMPLEXITY)], {
        N.CONTRACTS: {"atoms": [ADD], "not_examined": {"calc/broken.py": "invalid syntax (line 3)"}},
        N.ATOM_COMPLEXITY: {"atoms": [], "not_examined": {"calc.ops.add": "radon found no function",
                                                           "calc/huge.py": "larger than 2 MiB"}}})

    assert section["files_not_examined"] == {"calc/broken.py": "invalid syntax (line 3)",
                                             "calc/huge.py": "larger than 2 MiB"}
    assert items(section)["atom-complexity"]["not_measured"] == ("not measured (stage 16 satisfied; for this atom: "
                                                                 "radon found no function)")


def test_old_shapes_stay_readable_and_a_run_before_phase_b_lists_no_atom() -> None:
    # stage 15 first recorded its atoms as bare qualified names
    old = atom_evidence([not_run(N.ATOM_OPTIMIZATION, StageOutcome.SKIPPED, "no rewrite proposed")],
                        {N.ATOM_OPTIMIZATION: {"atoms": ["calc.ops.add"], "rewrites": []}})
    assert old["atom_count"] == 1
    assert items(old)["atom-optimization"]["not_measured"] == "not measured (stage 15 skipped: no rewrite proposed)"
    assert items(old)["contracts"]["measured"] is False

    before = atom_evidence([not_run(stage, StageOutcome.NOT_IMPLEMENTED, "cannot yet")
                            for stage in ATOM_STAGE_MEASURES], {})
    assert before["atoms"] == [] and before["atom_count"] == 0
    assert {stage["outcome"] for stage in before["stages"]} == {"not-implemented"}  # type: ignore[union-attr]


def test_complexity_says_growth_as_stage_16_recorded_it_in_either_shape() -> None:
    timed = {**ADD, "complexity": 2, "within_limit": True,
             "growth": {"measured": True, "exponent": "1.02", "detail": "time grows like size^1.02 over sizes 1, 2, 4"}}
    said = {**ADD, "complexity": 2, "within_limit": True, "growth": "not measured (this stage only reads the source)"}

    def summary(entry: dict[str, object]) -> object:
        return items(atom_evidence([ran(N.ATOM_COMPLEXITY)], {N.ATOM_COMPLEXITY: {"atoms": [entry]}}))[
            "atom-complexity"]["summary"]

    assert summary(timed) == "cyclomatic complexity 2; growth: time grows like size^1.02 over sizes 1, 2, 4"
    assert summary(said) == "cyclomatic complexity 2; growth not measured (this stage only reads the source)"


def test_seeds_and_mutation_say_in_words_what_was_run_and_what_it_found() -> None:
    """Issue 17: the review and ``task evidence`` read 11 and 13 as sentences, not raw scores; the failing seed is
    named, and a timed-out mutant counts as killed exactly as the score counts it."""
    verification = {"qualified_name": "calc.ops.add", "tests": ["t::a", "t::b"],
                    "seeds": ["11 passed", "12 failed", "13 passed"],
                    "findings": ["seed 12: t::b failed; reproduce with: python -m pytest …"]}
    mutation = {"atom": "calc.ops.add", "path": "calc/ops.py", "changed_lines": [6], "mutants": 6, "judged": 5,
                "killed": 3, "timed_out": 1, "survived": 1, "not_run": 1, "score": 80.0, "tests": ["t::a"]}
    section = atom_evidence([ran(N.CONTRACTS), ran(N.ATOM_VERIFICATION, StageOutcome.FAILED), ran(N.ATOM_MUTATION)],
                            {N.CONTRACTS: {"atoms": [ADD]}, N.ATOM_VERIFICATION: {"atoms": [verification]},
                             N.ATOM_MUTATION: {"atoms": [mutation]}})

    found = items(section)

    assert found["atom-verification"]["summary"] == (
        "2 covering test(s) in 3 seeded random order(s): 2 passed, 1 failed (seed 12; the findings give the command "
        "that replays it) (seeds 11, 12, 13)")
    assert found["atom-mutation"]["summary"] == ("4 of 5 judged mutant(s) of its changed lines killed (80.0%); "
                                                 "1 of them by a timeout; 1 survived; 1 not run")
    unjudged = {"atom": "calc.ops.add", "path": "calc/ops.py", "mutants": 0, "problem": "no test covers line 6"}
    again = items(atom_evidence([ran(N.CONTRACTS), ran(N.ATOM_MUTATION)],
                                {N.CONTRACTS: {"atoms": [ADD]}, N.ATOM_MUTATION: {"atoms": [unjudged]}}))
    assert again["atom-mutation"]["summary"] == "not judged: no test covers line 6"


def test_stage_12_s_entry_says_whether_the_atom_was_fuzzed_and_how_it_ended() -> None:
    crashed = {**ADD, "fuzzed": True, "outcome": "failed", "inputs": 37, "input": "{'data': b'\\x00'}",
               "findings": ["calc.ops.add raised builtins.ZeroDivisionError on input {'data': b'\\x00'}"]}
    section = atom_evidence([ran(N.CONTRACTS), ran(N.ATOM_FUZZ, StageOutcome.FAILED)],
                            {N.CONTRACTS: {"atoms": [ADD]}, N.ATOM_FUZZ: {"atoms": [crashed]}})

    found = items(section)["atom-fuzz"]

    assert found["measures"] == "fuzzing" and found["summary"] == "fuzzed: failed after 37 input(s)"
    assert found["findings"] == [crashed["findings"][0]]  # type: ignore[index]
    assert found["facts"]["input"] == "{'data': b'\\x00'}"  # type: ignore[index]
    skipped = {**ADD, "fuzzed": False, "detail": "not fuzzed: it does not parse or decode"}
    again = atom_evidence([ran(N.ATOM_FUZZ)], {N.ATOM_FUZZ: {"atoms": [skipped]}})
    assert items(again)["atom-fuzz"]["summary"] == "not fuzzed: it does not parse or decode"


def test_the_input_ladder_says_per_parameter_how_many_rungs_the_tests_exercised() -> None:
    ladder = {**ADD, "tests": ["t::a"], "parameters": [
        {"name": "a", "rungs": [{"rung": "typical"}, {"rung": "degenerate"}, {"rung": "wrong-type"}],
         "unexercised": ["wrong-type"]},
        {"name": "b", "rungs": [{"rung": "typical"}, {"rung": "degenerate"}], "unexercised": []},
        {"name": "*rest", "no_ladder": "no type codeflux derives a ladder from"}]}
    bare = {**ADD, "qualified_name": "calc.ops.now", "parameters": [],
            "skipped": "takes no parameter other than self/cls"}
    section = atom_evidence([ran(N.ATOM_CASE_SYNTHESIS, StageOutcome.FAILED)],
                            {N.ATOM_CASE_SYNTHESIS: {"atoms": [ladder, bare]}})

    assert items(section)["atom-case-synthesis"]["summary"] == (
        "a: 2 of 3 rungs exercised (not: wrong-type); b: 2 of 2 rungs exercised; *rest: no ladder")
    assert items(section, "calc.ops.now")["atom-case-synthesis"]["summary"] == (
        "not judged: takes no parameter other than self/cls")
