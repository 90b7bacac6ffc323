"""The ladder climbs only on a stall: one normalized failure fingerprint recurring three times on a rung."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ladder import (
    DEFAULT_LADDER,
    Effort,
    FailureKind,
    Ladder,
    LadderDecision,
    LadderPosition,
    ModelTier,
    Rung,
    failing_test_names,
    fingerprint_failure,
    fingerprint_tool_failure,
    normalize_failure_text,
)

CAPABLE_MAX = Rung.parse("capable:max")


def fail(
    position: LadderPosition, output: str, gate: str = "atom-verification"
) -> tuple[LadderPosition, LadderDecision]:
    after, step = position.record(FailureKind.CHECK, fingerprint_failure(gate=gate, output=output))
    return after, step.decision


# -------------------------------------------------------------------------------------------- rungs


def test_the_default_ladder_spends_effort_before_changing_model_and_leaves_out_capable_max() -> None:
    assert str(DEFAULT_LADDER) == "cheap:low → cheap:max → capable:low → capable:high"
    assert CAPABLE_MAX not in DEFAULT_LADDER.rungs
    assert [rung for rung in DEFAULT_LADDER.rungs if rung.asks_before_spending] == []


def test_only_capable_max_asks_before_spending() -> None:
    rungs = [Rung(tier=tier, effort=effort) for tier in ModelTier for effort in Effort]
    assert [str(rung) for rung in rungs if rung.asks_before_spending] == ["capable:max"]


def test_a_person_adds_capable_max_at_the_top() -> None:
    ladder = DEFAULT_LADDER.with_rung(CAPABLE_MAX)
    assert str(ladder) == "cheap:low → cheap:max → capable:low → capable:high → capable:max"
    assert ladder.with_rung(CAPABLE_MAX) == ladder


@pytest.mark.parametrize(
    "rungs",
    [[], ["cheap:low", "cheap:low"], ["capable:low", "cheap:high"], ["cheap:max", "cheap:low"]],
    ids=["empty", "duplicate", "model-down", "effort-down"],
)
def test_a_ladder_must_be_non_empty_without_duplicates_and_ascending(rungs: list[str]) -> None:
    with pytest.raises(InvalidValueError):
        Ladder.parse(rungs)


@pytest.mark.parametrize("text", ["cheap", "cheap:", "mid:low", "cheap:extreme", "CHEAP:LOW", "cheap:low:x"])
def test_a_malformed_rung_is_refused(text: str) -> None:
    with pytest.raises(InvalidValueError, match="tier:effort"):
        Rung.parse(text)


# ------------------------------------------------------------------------------------------ climbing


def test_three_recurrences_of_one_fingerprint_climb_one_rung_and_reset_the_counts() -> None:
    position = LadderPosition.start()
    position, first = fail(position, "AssertionError: expected 1, got 2")
    position, second = fail(position, "AssertionError: expected 1, got 2")
    position, third = fail(position, "AssertionError: expected 1, got 2")
    assert (first, second, third) == (LadderDecision.STAY, LadderDecision.STAY, LadderDecision.CLIMB)
    assert str(position.rung) == "cheap:max" and position.recurrences == ()


def test_recurrences_count_even_with_other_failures_in_between() -> None:
    position = LadderPosition.start()
    for output in ["error A", "error B", "error A", "error C", "error B"]:
        position, decision = fail(position, output)
        assert decision is LadderDecision.STAY
    position, decision = fail(position, "error A")
    assert decision is LadderDecision.CLIMB


def test_infrastructure_failures_never_count_toward_a_stall() -> None:
    position = LadderPosition.start()
    fingerprint = fingerprint_failure(gate="assembly", output="HTTP 429 rate limited")
    for _ in range(50):
        position, step = position.record(FailureKind.INFRASTRUCTURE, fingerprint)
        assert step.decision is LadderDecision.STAY
    assert position.recurrences == () and position.rung == DEFAULT_LADDER.rungs[0]


def test_the_rung_that_asks_is_not_climbed_until_a_person_approves_it() -> None:
    ladder = DEFAULT_LADDER.with_rung(CAPABLE_MAX)
    position = LadderPosition(ladder=ladder, rung=Rung.parse("capable:high"))
    for _ in range(2):
        position, _decision = fail(position, "boom")
    after, step = position.record(FailureKind.CHECK, fingerprint_failure(gate="atom-verification", output="boom"))
    assert step.decision is LadderDecision.ASK_BEFORE_CLIMB and step.rung == CAPABLE_MAX
    assert after.rung == Rung.parse("capable:high")
    assert after.climbed_to(CAPABLE_MAX).rung == CAPABLE_MAX


def test_a_stall_on_the_top_rung_exhausts_the_ladder() -> None:
    position = LadderPosition(rung=Rung.parse("capable:high"), stall_threshold=1)
    after, step = position.record(FailureKind.CHECK, fingerprint_failure(gate="assembly", output="x"))
    assert step.decision is LadderDecision.EXHAUSTED and step.stalled_on is not None
    assert after.rung == position.rung


def test_climbing_can_only_go_one_rung_up_and_the_threshold_is_bounded() -> None:
    with pytest.raises(InvalidValueError):
        LadderPosition.start().climbed_to(Rung.parse("capable:low"))
    for threshold in (0, 11):
        with pytest.raises(InvalidValueError):
            LadderPosition.start(stall_threshold=threshold)
    with pytest.raises(InvalidValueError):
        LadderPosition.start().record(FailureKind.CHECK, None)


# -------------------------------------------------------------------------------------- fingerprints


def test_failing_tests_are_compared_as_a_set_so_fixing_one_is_progress() -> None:
    two = "FAILED tests/test_a.py::test_x - assert 1\nFAILED tests/test_b.py::test_y - boom at 0x7f00aa"
    reordered = "FAILED tests/test_b.py::test_y - other text\nFAILED tests/test_a.py::test_x - assert 2"
    one = "FAILED tests/test_a.py::test_x - assert 1"
    fingerprint = fingerprint_failure(gate="atom-verification", output=two)
    assert fingerprint == fingerprint_failure(gate="atom-verification", output=reordered)
    assert fingerprint != fingerprint_failure(gate="atom-verification", output=one)
    assert fingerprint.summary == "failing tests: tests/test_a.py::test_x, tests/test_b.py::test_y"


def test_test_names_are_read_from_pytest_unittest_and_go_output_or_given_directly() -> None:
    output = ("tests/t.py::test_q FAILED\nFAIL: test_z (pkg.mod.Case)\n--- FAIL: TestGo (0.00s)\n"
              "ERROR tests/t.py::test_err - fixture")  # fmt: skip
    assert failing_test_names(output) == {"tests/t.py::test_q", "pkg.mod.case.test_z", "testgo", "tests/t.py::test_err"}
    given_set = fingerprint_failure(gate="g", output="anything", failing_tests=["b", "a"])
    assert given_set == fingerprint_failure(gate="g", output="other", failing_tests=["a", "b"])


def test_the_gate_and_the_stable_text_distinguish_failures() -> None:
    text = "AssertionError: expected 1, got 2"
    assert fingerprint_failure(gate="assembly", output=text) != fingerprint_failure(gate="adversarial", output=text)
    assert fingerprint_failure(gate="g", output=text) != fingerprint_failure(gate="g", output=text.replace("2", "3"))


def test_normalization_masks_what_changes_between_runs() -> None:
    text = ("E   Error at 0x7f3a2b1c took 1.234s in /tmp/pytest-of-root/pytest-42/test_a0/foo.py:123:4 "
            "id 3fa85f64-5717-4562-b3fc-2c963f66afa6 commit abc1234def at 2024-05-01T12:00:01Z pid 48213 "
            "from 127.0.0.1:54321")  # fmt: skip
    assert normalize_failure_text(text) == (
        "e error at <addr> took <duration> in <path>/foo.py:<line> id <id> commit <hex> at <time> pid # "
        "from <addr>"
    )


_ADDRESSES = st.integers(min_value=0x1000, max_value=2**48).map(hex)
_HEX_IDS = st.from_regex(r"[0-9a-f]{12,40}", fullmatch=True).filter(lambda s: any(c.isdigit() for c in s)
                                                                     and any(c.isalpha() for c in s))  # fmt: skip
_DIRS = st.lists(st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True), min_size=1, max_size=4)
_DURATIONS = st.builds(lambda n, unit: f"{n}{unit}", st.integers(0, 10**6), st.sampled_from(["s", "ms", " seconds"]))
_BIG = st.integers(min_value=1000, max_value=10**12).map(str)
_LINES = st.builds(lambda a, b: f"{a}:{b}", st.integers(1, 10**5), st.integers(1, 500))


_NOISE = st.fixed_dictionaries(
    {"address": _ADDRESSES, "id": _HEX_IDS, "dirs": _DIRS, "duration": _DURATIONS, "number": _BIG, "line": _LINES}
)


def _render(noise: dict[str, object]) -> str:
    path = "/".join(noise["dirs"])  # type: ignore[arg-type]
    return (
        f"KeyError 'name' in object at {noise['address']} (build {noise['id']})\n"
        f"  File /{path}/module.py:{noise['line']} after {noise['duration']}, request {noise['number']}"
    )


@given(_NOISE, _NOISE)
def test_a_fingerprint_is_invariant_under_masked_noise(first: dict[str, object], second: dict[str, object]) -> None:
    one = fingerprint_failure(gate="assembly", output=_render(first))
    assert one == fingerprint_failure(gate="assembly", output=_render(second))


def test_a_resumed_run_goes_on_from_the_highest_rung_already_used() -> None:
    """Issue 14 item 7: a pause, resume or restart never sends a task back to the bottom of the ladder."""
    used = [Rung.parse("cheap:low"), Rung.parse("capable:low"), Rung.parse("cheap:max")]
    assert LadderPosition.resumed(used).rung == Rung.parse("capable:low")
    assert LadderPosition.resumed([]).rung == DEFAULT_LADDER.rungs[0]
    assert LadderPosition.resumed([Rung.parse("capable:max")]).rung == DEFAULT_LADDER.rungs[0]  # not on the ladder
    assert LadderPosition.resumed(used).recurrences == ()


def test_a_continued_position_counts_only_the_trailing_send_backs_on_its_own_rung() -> None:
    position = LadderPosition.start().climbed_to(Rung.parse("cheap:max"))
    journal = [("cheap:low", "a", "stay"), ("cheap:low", "a", "climb"), ("cheap:max", "b", "stay"),
               ("cheap:max", "b", "stay"), ("cheap:max", "c", "stay")]

    continued, repairs = position.continued(journal)

    assert repairs == 3 and continued.rung == position.rung
    assert dict(continued.recurrences) == {"b": 2, "c": 1}  # "a" was seen on the rung below, before the climb
    assert position.continued([]) == (position, 0)


# ─── tool failures: the tool, the target and the kind (issue 15 item 6) ─────────────────────────────

_PATHS = st.lists(st.from_regex(r"[a-z_]{1,8}(/[a-z_]{1,8}){0,2}\.py", fullmatch=True), min_size=2, max_size=5,
                  unique=True)
_KINDS = st.sampled_from(["not-found", "no-match", "path-refused", "already-exists", "content-mismatch"])
_HEX = st.from_regex(r"[0-9a-f]{6}[0-9][a-f][0-9a-f]{0,8}", fullmatch=True)


@given(paths=_PATHS, kind=_KINDS, message=st.text(max_size=60))
def test_failures_on_different_paths_never_share_a_fingerprint(paths: list[str], kind: str, message: str) -> None:
    """Three misses on three files are three mistakes: distinct targets give distinct fingerprints, whatever
    the message says (an error text that omits the path cannot make them alike)."""
    digests = {fingerprint_tool_failure(tool="edit_file", target=path, kind=kind, detail=message).digest
               for path in paths}
    assert len(digests) == len(paths)


@given(path=_PATHS.map(lambda paths: paths[0]), kind=_KINDS, lines=st.lists(st.integers(0, 10**6), min_size=3,
       max_size=3), ids=st.lists(_HEX, min_size=3, max_size=3))
def test_the_same_miss_on_the_same_file_is_one_fingerprint_whatever_its_numbers_and_ids(
        path: str, kind: str, lines: list[int], ids: list[str]) -> None:
    """Line numbers, counts and hex ids vary between tries of the same mistake; they are masked, so the same
    (tool, path, kind) recurs and can stall."""
    digests = {fingerprint_tool_failure(
        tool="edit_file", target=path, kind=kind,
        detail=f"old_text occurs {line % 7 + 2} times (lines {line}, {line + 5}) near object {hex_id}").digest
        for line, hex_id in zip(lines, ids, strict=True)}
    assert len(digests) == 1


def test_tool_kind_and_target_each_tell_tool_failures_apart() -> None:
    base = fingerprint_tool_failure(tool="read_file", target="a.py", kind="not-found", detail="a.py: not found")
    assert base.gate == "tool:read_file" and "a.py" in base.summary and "not-found" in base.summary
    others = [fingerprint_tool_failure(tool="delete_file", target="a.py", kind="not-found", detail="a.py: not found"),
              fingerprint_tool_failure(tool="read_file", target="a.py", kind="not-text", detail="a.py: not found"),
              fingerprint_tool_failure(tool="read_file", target="b.py", kind="not-found", detail="a.py: not found")]
    assert len({base.digest, *(other.digest for other in others)}) == 4


def test_a_command_failing_on_other_tests_is_progress_and_on_the_same_tests_a_recurrence() -> None:
    def of(output: str) -> str:
        return fingerprint_tool_failure(tool="run_command", target="python -m", kind="nonzero-exit",
                                        detail=output).digest

    one = of("FAILED tests/test_a.py::test_x - assert 1 == 2\n1 failed in 0.31s")
    assert one == of("FAILED tests/test_a.py::test_x - assert 3 == 4\n1 failed in 0.12s")
    assert one != of("FAILED tests/test_a.py::test_y - assert 1 == 2\n1 failed in 0.31s")
