"""Requirement sentences, the deterministic ambiguity check (stage 2) and trace coverage (stage 4)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from codeflux.domain.acceptance import AcceptanceExample
from codeflux.domain.clarification import (
    MAX_SENTENCES,
    NamedReference,
    QuestionOrigin,
    find_ambiguities,
    named_references,
    requirement_sentences,
    trace_coverage,
)

PROPERTY = settings(database=None, deadline=None, max_examples=300)


@dataclass(frozen=True)
class Names:
    """A repository's names as a plain set (what ``repository_names_at_head`` gives in production)."""

    paths: frozenset[str] = frozenset({"calc/ops.py", "calc/__init__.py", "tests/test_ops.py", "README.md"})
    words: frozenset[str] = frozenset({"add", "sub", "test_add"})

    def has_path(self, path: str) -> bool:
        return path in self.paths or any(p.startswith(path.rstrip("/") + "/") for p in self.paths)

    def has_identifier(self, name: str) -> bool:
        return name in self.words


# ─── sentences ─────────────────────────────────────────────────────────────────────────────────────


def test_sentences_are_numbered_in_order_and_acceptance_blocks_are_left_out() -> None:
    requirement = ("Make add() correct for negatives. Keep sub() as it is! Why not?\n\n"
                   "<<<ACCEPTANCE\ntest: tests/test_ops.py::test_add_negative\n>>>\n"
                   "- Document it, e.g. in the README.\n- Add a test")
    assert requirement_sentences(requirement) == (
        "Make add() correct for negatives.", "Keep sub() as it is!", "Why not?",
        "- Document it, e.g. in the README.", "- Add a test")


def test_a_plain_requirement_without_punctuation_is_one_sentence_and_blank_text_is_none() -> None:
    assert requirement_sentences("make the failing test pass") == ("make the failing test pass",)
    assert requirement_sentences("  \n\n ... \n") == ()
    assert requirement_sentences("version 3.11 is fine. calc.py stays") == ("version 3.11 is fine. calc.py stays",)


@PROPERTY
@given(st.text(max_size=600))
def test_the_splitter_never_raises_is_deterministic_and_keeps_every_word_in_order(text: str) -> None:
    first = requirement_sentences(text)
    assert first == requirement_sentences(text)
    assert len(first) <= MAX_SENTENCES
    assert all(s == s.strip() and s and any(c.isalnum() for c in s) for s in first)
    if "<<<ACCEPTANCE" not in text and len(first) < MAX_SENTENCES and all(len(s) < 1000 for s in first):
        kept = [word for word in text.split() if any(c.isalnum() for c in word)]
        assert [word for s in first for word in s.split() if any(c.isalnum() for c in word)] == kept


# ─── named references and the ambiguity check ──────────────────────────────────────────────────────


def test_backticked_names_and_path_like_tokens_are_the_names_checked() -> None:
    references = named_references("Use `multiply` from `calc.ops` in calc/ops.py, and/or lib/y.py. See "
                                  "https://example.org/a.py, e.g. `print` and `python -m pytest`.")
    assert references == (NamedReference(kind="identifier", name="multiply"),
                          NamedReference(kind="identifier", name="ops"),
                          NamedReference(kind="path", name="calc/ops.py"),
                          NamedReference(kind="slash-path", name="and/or"),
                          NamedReference(kind="path", name="lib/y.py"))


def test_an_absent_path_or_identifier_becomes_a_question_unless_a_step_creates_it() -> None:
    requirement = "Add `multiply` next to `add` in calc/ops.py and document it in docs/calc.md and/or README.md."

    checked, findings = find_ambiguities(requirement, (), planned_paths=(), names=Names())
    assert [f.question.split("`")[1] for f in findings] == ["multiply", "docs/calc.md"]
    assert all(f.origin is QuestionOrigin.ABSENT_NAME and f.assumption for f in findings)
    assert {r.name for r in checked} == {"multiply", "add", "calc/ops.py", "docs/calc.md", "and/or", "README.md"}

    _, planned = find_ambiguities(requirement, (), planned_paths=("docs/calc.md",), names=Names())
    assert [f.question.split("`")[1] for f in planned] == ["multiply"]
    _, folder = find_ambiguities("Put it under `docs`.", (), planned_paths=("docs/calc.md",), names=Names())
    assert folder == ()  # a folder a step writes into is not absent


def test_the_same_command_expecting_different_output_is_a_contradiction() -> None:
    examples = (AcceptanceExample(argv=("python", "-m", "calc", "add", "-1", "2"), expected=("1",)),
                AcceptanceExample(test="tests/test_ops.py::test_add"),
                AcceptanceExample(argv=("python", "-m", "calc", "add", "-1", "2"), expected=("1",)),
                AcceptanceExample(argv=("python", "-m", "calc", "add", "-1", "2"), expected=("-3",)))
    _, findings = find_ambiguities("Fix it.", examples, planned_paths=(), names=Names())
    assert len(findings) == 1 and findings[0].origin is QuestionOrigin.CONTRADICTING_EXAMPLES
    assert "examples 1 and 4" in findings[0].question


@PROPERTY
@given(st.text(max_size=400), st.lists(st.text(min_size=1, max_size=20), max_size=5))
def test_the_ambiguity_check_never_raises_and_is_deterministic(text: str, planned: list[str]) -> None:
    first = find_ambiguities(text, (), planned_paths=planned, names=Names())
    assert first == find_ambiguities(text, (), planned_paths=planned, names=Names())


# ─── trace coverage ────────────────────────────────────────────────────────────────────────────────


def test_coverage_lists_what_no_step_names_and_numbers_that_do_not_exist() -> None:
    coverage = trace_coverage([((1,), (1, 2)), ((), (4, 9))], examples=2, sentences=4)
    assert coverage.uncovered_examples == (2,) and coverage.uncovered_sentences == (3,)
    assert coverage.unknown_examples == () and coverage.unknown_sentences == (9,)
    complete = trace_coverage([((1, 2), (1,)), ((2,), (2,))], examples=2, sentences=2)
    assert complete.uncovered_examples == complete.uncovered_sentences == ()
