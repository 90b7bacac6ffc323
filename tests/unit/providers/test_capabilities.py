"""The capability table covers every model codeflux ships a price for, each row cites its source, and
the rules it feeds give what the providers document (the wire itself: tests/integration/test_provider_wire_rules.py)."""

from __future__ import annotations

import pytest

from codeflux.domain.ladder import Effort
from codeflux.domain.providers import ProviderName
from codeflux.providers.capabilities import (
    CONTEXT_WINDOW_SOURCES,
    DEFAULT_CONTEXT_WINDOW,
    MODEL_CAPABILITIES,
    ThinkingForm,
    anthropic_thinking,
    capabilities_of,
    context_window_of,
    openai_reasoning_effort,
)
from codeflux.providers.prices import DEFAULT_PRICE_SNAPSHOTS, PriceSnapshot


@pytest.mark.parametrize("snapshot", DEFAULT_PRICE_SNAPSHOTS, ids=lambda s: s.model)
def test_every_priced_model_and_its_dated_alias_has_a_row(snapshot: PriceSnapshot) -> None:
    for model in (snapshot.model, *snapshot.aliases):
        row = capabilities_of(snapshot.provider, model)
        assert row is not None, model
        assert row.model == snapshot.model


def test_rows_are_unique_and_each_names_the_document_it_comes_from() -> None:
    names = [(row.provider, name) for row in MODEL_CAPABILITIES for name in (row.model, *row.aliases)]
    assert len(names) == len(set(names))
    assert all(row.source.startswith(("https://platform.claude.com/docs/", "https://platform.openai.com/docs/"))
               for row in MODEL_CAPABILITIES)
    anthropic = [row for row in MODEL_CAPABILITIES if row.provider is ProviderName.ANTHROPIC]
    assert all(row.thinking is not ThinkingForm.NONE and not row.reasoning_effort for row in anthropic)
    assert {row.model for row in anthropic if row.thinking is ThinkingForm.ADAPTIVE} == {
        "claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6"}


def test_a_budget_never_takes_more_than_half_the_output_bound() -> None:
    for bound in range(1, 70_000, 997):
        for effort in Effort:
            thinking = anthropic_thinking("claude-haiku-4-5", effort, max_output_tokens=bound).get("thinking")
            if isinstance(thinking, dict):
                assert 1024 <= thinking["budget_tokens"] <= bound // 2


def test_no_effort_sends_nothing_anywhere() -> None:
    assert anthropic_thinking("claude-opus-4-6", None, max_output_tokens=8192) == {}
    assert openai_reasoning_effort("o3", None) is None


@pytest.mark.parametrize(("model", "window"), [
    ("claude-opus-4-7", 200_000), ("claude-haiku-4-5-20251001", 200_000), ("gpt-5", 400_000),
    ("gpt-5-mini-2025-08-07", 400_000), ("o3", 200_000), ("o4-mini", 200_000), ("gpt-4.1", 1_047_576),
    ("gpt-4.1-nano", 1_047_576), ("gpt-4o", 128_000), ("gpt-4o-mini-2024-07-18", 128_000)])
def test_each_model_has_its_documented_context_window(model: str, window: int) -> None:
    provider = ProviderName.ANTHROPIC if model.startswith("claude") else ProviderName.OPENAI
    assert context_window_of(provider, model) == window
    assert provider in CONTEXT_WINDOW_SOURCES


def test_a_model_the_table_does_not_know_gets_the_conservative_default_window() -> None:
    assert DEFAULT_CONTEXT_WINDOW == 32_768
    assert context_window_of(ProviderName.OPENAI_COMPATIBLE, "llama3.1:8b") == DEFAULT_CONTEXT_WINDOW
    assert context_window_of(ProviderName.OPENAI, "gpt-9") == DEFAULT_CONTEXT_WINDOW
    assert all(row.context_window >= DEFAULT_CONTEXT_WINDOW for row in MODEL_CAPABILITIES)
