"""Incident fingerprints and states (codeflux/domain/incidents.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.errors import InvalidValueError, TransitionNotAllowedError
from codeflux.domain.incidents import (
    IncidentState,
    OwnFrame,
    TextShape,
    fingerprint_incident,
    may_propose_again,
    next_incident_state,
    parse_dismiss_reason,
    state_after_occurrence,
)
from codeflux.domain.tasks import TaskState

FILES = frozenset({"app/main.py", "app/store.py", "app/util.py", "tests/test_store.py"})


def traceback(*, prefix: str = "/home/dev/proj", lines: tuple[int, int, int] = (12, 8, 40),
              message: str = "no row 1234 for tsk_01h2abcdef9 at 0xdeadbeef", inner: str = "load",
              inner_file: str = "app/store.py") -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{prefix}/app/main.py", line {lines[0]}, in <module>\n'
        "    main()\n"
        f'  File "{prefix}/app/main.py", line {lines[1]}, in main\n'
        "    load(3)\n"
        '  File "/usr/lib/python3/site-packages/app/util.py", line 7, in wrapper\n'
        "    return f()\n"
        f'  File "{prefix}/{inner_file}", line {lines[2]}, in {inner}\n'
        "    raise LookupFailed(...)\n"
        "    ^^^^^^^^^^^^^^^^^^^^^^^\n"
        f"app.errors.LookupFailed: {message}\n"
    )


def test_a_traceback_gives_type_own_frames_and_the_normalised_message() -> None:
    found = fingerprint_incident(traceback(), repository_files=FILES)
    assert found.shape is TextShape.TRACEBACK
    assert found.exception_type == "app.errors.LookupFailed"
    # the site-packages frame names a repository path but is installed code: not the repository's own
    assert found.frames == (OwnFrame(path="app/main.py", function="<module>"),
                            OwnFrame(path="app/main.py", function="main"),
                            OwnFrame(path="app/store.py", function="load"))
    assert found.message == "no row # for <id> at <addr>"
    assert found.summary == "app.errors.LookupFailed in app/store.py:load: no row # for <id> at <addr>"


def test_the_last_exception_of_a_chain_is_the_one_fingerprinted() -> None:
    chained = (traceback(message="first") + "\nDuring handling of the above exception, another exception occurred:\n\n"
               + traceback(message="second", inner="save"))
    found = fingerprint_incident(chained, repository_files=FILES)
    assert found.message == "second" and found.frames[-1] == OwnFrame(path="app/store.py", function="save")


def test_recursion_depth_does_not_change_the_fingerprint() -> None:
    def deep(depth: int) -> str:
        frames = "".join(f'  File "/p/app/util.py", line {10 + i}, in walk\n    walk()\n' for i in range(depth))
        return f"Traceback (most recent call last):\n{frames}RecursionError: maximum recursion depth exceeded\n"
    assert fingerprint_incident(deep(3), repository_files=FILES) == fingerprint_incident(deep(40),
                                                                                        repository_files=FILES)


def test_a_log_excerpt_uses_its_first_error_line() -> None:
    text = "INFO starting worker 12\nWARNING slow\nERROR connection refused by db at 10.0.0.7:5432 after 3 tries\n"
    found = fingerprint_incident(text, repository_files=FILES)
    assert found.shape is TextShape.LOG and found.frames == ()
    assert found.exception_type == "log"
    assert found.message == "error connection refused by db at <addr> after # tries"
    typed = fingerprint_incident("12:00:01 KeyError: 'user 77'\n", repository_files=FILES)
    assert (typed.exception_type, typed.message) == ("KeyError", "'user #'")
    plain = fingerprint_incident("\n  the service stopped answering  \n", repository_files=FILES)
    assert plain.message == "the service stopped answering"


def test_blank_and_oversized_text_is_refused() -> None:
    with pytest.raises(InvalidValueError):
        fingerprint_incident(" \n\t\n", repository_files=FILES)
    with pytest.raises(InvalidValueError):
        fingerprint_incident("x" * 300_000, repository_files=FILES)


_SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12).filter(
    lambda s: s not in ("app", "tests", "site-packages", "dist-packages"))
_PREFIX = st.lists(_SEGMENT, min_size=0, max_size=5).map(lambda parts: "/" + "/".join(parts) if parts else "")
_LINES = st.tuples(*(st.integers(min_value=1, max_value=99_999),) * 3)
# Two values of one kind (a run's count, address, id …): the same message slot varies only within its kind.
_VOLATILE_PAIR = st.one_of(
    st.tuples(*(st.integers(min_value=0, max_value=10**12).map(str),) * 2),
    st.tuples(*(st.integers(min_value=0, max_value=2**64).map(hex),) * 2),
    st.tuples(*(st.text(alphabet="0123456789abcdef", min_size=32, max_size=32).map(lambda h: f"tsk_{h}1"),) * 2),
    st.tuples(*(st.uuids().map(str),) * 2),
)


@settings(max_examples=40, deadline=None)
@given(prefix_a=_PREFIX, prefix_b=_PREFIX, lines_a=_LINES, lines_b=_LINES, volatile=_VOLATILE_PAIR)
def test_the_fingerprint_ignores_line_numbers_path_prefixes_and_volatile_message_parts(
        prefix_a: str, prefix_b: str, lines_a: tuple[int, int, int], lines_b: tuple[int, int, int],
        volatile: tuple[str, str]) -> None:
    first = fingerprint_incident(traceback(prefix=prefix_a, lines=lines_a, message=f"no row {volatile[0]} here"),
                                 repository_files=FILES)
    second = fingerprint_incident(traceback(prefix=prefix_b, lines=lines_b, message=f"no row {volatile[1]} here"),
                                  repository_files=FILES)
    assert first.digest == second.digest
    assert len(first.frames) == 3  # positive control: the own frames were found under every prefix


@settings(max_examples=30, deadline=None)
@given(prefix=_PREFIX, function=st.from_regex(r"[a-z_][a-z0-9_]{0,15}", fullmatch=True).filter(lambda f: f != "load"))
def test_a_different_own_frame_changes_the_fingerprint(prefix: str, function: str) -> None:
    base = fingerprint_incident(traceback(prefix=prefix), repository_files=FILES)
    other_function = fingerprint_incident(traceback(prefix=prefix, inner=function), repository_files=FILES)
    other_file = fingerprint_incident(traceback(prefix=prefix, inner_file="app/util.py"), repository_files=FILES)
    assert len({base.digest, other_function.digest, other_file.digest}) == 3


def test_a_frame_outside_the_repository_does_not_count() -> None:
    base = fingerprint_incident(traceback(), repository_files=FILES)
    foreign = fingerprint_incident(traceback(inner_file="vendor/lib.py"), repository_files=FILES)
    assert foreign.frames == base.frames[:2]
    assert foreign.digest != base.digest  # the innermost own frame is gone: another failure shape


_ALLOWED = [
    (IncidentState.NEW, IncidentState.TASK_PROPOSED), (IncidentState.NEW, IncidentState.DISMISSED),
    (IncidentState.TASK_PROPOSED, IncidentState.FIXED), (IncidentState.TASK_PROPOSED, IncidentState.DISMISSED),
    (IncidentState.FIXED, IncidentState.REGRESSED), (IncidentState.REGRESSED, IncidentState.TASK_PROPOSED),
    (IncidentState.REGRESSED, IncidentState.FIXED), (IncidentState.REGRESSED, IncidentState.DISMISSED),
]


@pytest.mark.parametrize(("current", "to"), _ALLOWED)
def test_allowed_transitions(current: IncidentState, to: IncidentState) -> None:
    assert next_incident_state(current, to) is to


@given(current=st.sampled_from(IncidentState), to=st.sampled_from(IncidentState))
def test_every_other_transition_is_refused_with_both_states(current: IncidentState, to: IncidentState) -> None:
    if (current, to) in _ALLOWED:
        return
    with pytest.raises(TransitionNotAllowedError) as refused:
        next_incident_state(current, to)
    assert (refused.value.machine, refused.value.from_state, refused.value.to_state) == ("incident", current, to)


def test_an_occurrence_regresses_only_a_fixed_incident() -> None:
    assert state_after_occurrence(IncidentState.FIXED) is IncidentState.REGRESSED
    assert {state_after_occurrence(s) for s in IncidentState if s is not IncidentState.FIXED} == {None}


def test_a_dismiss_reason_is_required_and_one_line() -> None:
    assert parse_dismiss_reason("  flaky\n  network  ") == "flaky network"
    with pytest.raises(InvalidValueError):
        parse_dismiss_reason("   ")
    with pytest.raises(InvalidValueError):
        parse_dismiss_reason("x" * 1025)


def test_a_new_proposal_waits_for_the_proposed_task_to_end_without_landing() -> None:
    assert {s for s in TaskState if may_propose_again(s)} == {TaskState.CANCELLED, TaskState.ROLLED_BACK}
