"""What each provider model accepts: the table that decides which request parameters are sent.

Parameters a model does not accept are answered with HTTP 400, so they are decided here, per model, as
data — never by guessing from a model's name in an adapter. The table lists every model of the shipped
price table (:data:`codeflux.providers.prices.DEFAULT_PRICE_SNAPSHOTS`, with its dated aliases) and the
newer Anthropic models that take adaptive thinking. ``docs/agent.md`` ("Model parameters") shows the
table and where each fact comes from.

* **Anthropic thinking** (:class:`ThinkingForm`): ``adaptive`` models get ``thinking: {type: adaptive}``
  and ``output_config: {effort}``; ``budget`` models get ``thinking: {type: enabled, budget_tokens}``
  with a budget that leaves half of ``max_tokens`` for the answer (the budget counts against
  ``max_tokens``, must be below it and at least 1,024); ``none``: no thinking parameter.
* **OpenAI ``reasoning_effort``**: sent only to reasoning models; a non-reasoning model (``gpt-4o``,
  ``gpt-4.1``) refuses the request that carries it.
* **OpenAI wire** (:class:`OpenAIWire`): ``chat-completions`` for most models; ``responses`` for models
  OpenAI serves only on the Responses API (``gpt-5-codex``: "only available in the Responses API", its
  model page and prompting guide), which :mod:`codeflux.providers.responses` speaks.

A model missing from the table gets only what every model of its provider accepts: no thinking, no
``reasoning_effort``.

* **Context window** (``context_window``, tokens of input and output together, as each provider's model
  page gives it): what the loop measures its requests against before each call
  (:mod:`codeflux.domain.context_window`). Claude models count 200,000 — the standard window; the
  1M-token window some of them offer needs a beta header or a tier codeflux does not assume. A model
  missing from the table gets :data:`DEFAULT_CONTEXT_WINDOW` (32,768): conservative on purpose, since
  an unknown model is often a small local one behind an OpenAI-compatible server, and a window counted
  too small costs an early compaction while one counted too large costs a refused request.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from codeflux.domain.ladder import Effort
from codeflux.domain.providers import ProviderName

__all__ = [
    "CONTEXT_WINDOW_SOURCES",
    "DEFAULT_CONTEXT_WINDOW",
    "MIN_THINKING_BUDGET",
    "MODEL_CAPABILITIES",
    "ModelCapabilities",
    "OpenAIWire",
    "ThinkingForm",
    "anthropic_thinking",
    "capabilities_of",
    "context_window_of",
    "openai_reasoning_effort",
    "openai_wire",
]

MIN_THINKING_BUDGET: Final = 1_024
"""Anthropic's smallest ``budget_tokens``."""
DEFAULT_CONTEXT_WINDOW: Final = 32_768
"""The context window (tokens) counted for a model the table does not list (see the module docstring)."""

_THINKING_BUDGET: Final = {Effort.MEDIUM: 4_096, Effort.HIGH: 16_384, Effort.MAX: 32_768}
_ANTHROPIC_EFFORT: Final = {Effort.LOW: "low", Effort.MEDIUM: "medium", Effort.HIGH: "high", Effort.MAX: "max"}
_OPENAI_EFFORT: Final = {Effort.LOW: "low", Effort.MEDIUM: "medium", Effort.HIGH: "high", Effort.MAX: "high"}

_ADAPTIVE_DOC: Final = "https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking"
_EXTENDED_DOC: Final = "https://platform.claude.com/docs/en/build-with-claude/extended-thinking"
_REASONING_DOC: Final = "https://platform.openai.com/docs/guides/reasoning"
_CHAT_DOC: Final = "https://platform.openai.com/docs/api-reference/chat/create#chat-create-reasoning_effort"
_CODEX_DOC: Final = "https://platform.openai.com/docs/models/gpt-5-codex"
CONTEXT_WINDOW_SOURCES: Final = {
    ProviderName.ANTHROPIC: "https://platform.claude.com/docs/en/build-with-claude/context-windows",
    ProviderName.OPENAI: "https://platform.openai.com/docs/models",
}
"""Where the windows come from: Anthropic's "Context windows" page and models overview; each OpenAI model's
page (gpt-5 family 400,000; o3 and o4-mini 200,000; gpt-4.1 family 1,047,576; gpt-4o and gpt-4o-mini 128,000)."""
_CLAUDE_WINDOW: Final = 200_000


class ThinkingForm(StrEnum):
    """How an Anthropic model is asked to think."""

    ADAPTIVE = "adaptive"  # thinking: {type: adaptive} + output_config.effort
    BUDGET = "budget"  # thinking: {type: enabled, budget_tokens: N} (deprecated where adaptive exists)
    NONE = "none"  # no thinking parameter


class OpenAIWire(StrEnum):
    """Which OpenAI API a model is called through."""

    CHAT_COMPLETIONS = "chat-completions"
    RESPONSES = "responses"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCapabilities:
    """One model's row: its id and aliases, how it thinks (Anthropic), whether ``max`` effort exists
    (Anthropic adaptive), whether it takes ``reasoning_effort`` (OpenAI), and where that is documented."""

    provider: ProviderName
    model: str
    aliases: tuple[str, ...] = ()
    thinking: ThinkingForm = ThinkingForm.NONE
    max_effort: bool = False
    reasoning_effort: bool = False
    wire: OpenAIWire = OpenAIWire.CHAT_COMPLETIONS
    """OpenAI: the API the model is called through."""
    context_window: int
    """Input and output tokens together (see the module docstring)."""
    source: str

    def matches(self, model: str) -> bool:
        return model == self.model or model in self.aliases


def _claude(model: str, thinking: ThinkingForm, *aliases: str, max_effort: bool = False) -> ModelCapabilities:
    source = _ADAPTIVE_DOC if thinking is ThinkingForm.ADAPTIVE else _EXTENDED_DOC
    return ModelCapabilities(provider=ProviderName.ANTHROPIC, model=model, aliases=aliases, thinking=thinking,
                             max_effort=max_effort, context_window=_CLAUDE_WINDOW, source=source)


def _gpt(model: str, *aliases: str, reasoning: bool, window: int,
         wire: OpenAIWire = OpenAIWire.CHAT_COMPLETIONS, source: str | None = None) -> ModelCapabilities:
    return ModelCapabilities(provider=ProviderName.OPENAI, model=model, aliases=aliases, reasoning_effort=reasoning,
                             wire=wire, context_window=window,
                             source=source or (_REASONING_DOC if reasoning else _CHAT_DOC))


_ADAPTIVE, _BUDGET = ThinkingForm.ADAPTIVE, ThinkingForm.BUDGET

MODEL_CAPABILITIES: Final[tuple[ModelCapabilities, ...]] = (
    # Adaptive thinking; `enabled` is refused (4.7) or deprecated (4.6). `max` effort: Opus only.
    _claude("claude-opus-4-7", _ADAPTIVE, max_effort=True),
    _claude("claude-opus-4-6", _ADAPTIVE, max_effort=True),
    _claude("claude-sonnet-4-6", _ADAPTIVE),
    # No adaptive thinking: `enabled` with budget_tokens.
    _claude("claude-opus-4-5", _BUDGET, "claude-opus-4-5-20251101"),
    _claude("claude-opus-4-1", _BUDGET, "claude-opus-4-1-20250805"),
    _claude("claude-opus-4-0", _BUDGET, "claude-opus-4-20250514"),
    _claude("claude-sonnet-4-5", _BUDGET, "claude-sonnet-4-5-20250929"),
    _claude("claude-sonnet-4-0", _BUDGET, "claude-sonnet-4-20250514"),
    _claude("claude-haiku-4-5", _BUDGET, "claude-haiku-4-5-20251001"),
    # Reasoning models take reasoning_effort.
    _gpt("gpt-5", "gpt-5-2025-08-07", reasoning=True, window=400_000),
    _gpt("gpt-5-mini", "gpt-5-mini-2025-08-07", reasoning=True, window=400_000),
    _gpt("gpt-5-nano", "gpt-5-nano-2025-08-07", reasoning=True, window=400_000),
    _gpt("o3", "o3-2025-04-16", reasoning=True, window=200_000),
    _gpt("o4-mini", "o4-mini-2025-04-16", reasoning=True, window=200_000),
    # Served only on the Responses API.
    _gpt("gpt-5-codex", reasoning=True, window=400_000, wire=OpenAIWire.RESPONSES, source=_CODEX_DOC),
    # Non-reasoning models refuse it (HTTP 400 "Unrecognized request argument supplied: reasoning_effort").
    _gpt("gpt-4.1", "gpt-4.1-2025-04-14", reasoning=False, window=1_047_576),
    _gpt("gpt-4.1-mini", "gpt-4.1-mini-2025-04-14", reasoning=False, window=1_047_576),
    _gpt("gpt-4.1-nano", "gpt-4.1-nano-2025-04-14", reasoning=False, window=1_047_576),
    _gpt("gpt-4o", "gpt-4o-2024-08-06", reasoning=False, window=128_000),
    _gpt("gpt-4o-mini", "gpt-4o-mini-2024-07-18", reasoning=False, window=128_000),
)  # fmt: skip


def capabilities_of(provider: ProviderName, model: str) -> ModelCapabilities | None:
    """The row of ``model`` (its id or a dated alias, exactly), or None for a model codeflux does not know."""
    row = _ROW_OF_NAME.get((provider, model))
    return row if row is not None and row.provider is provider else None


# (provider, model id or alias) -> its row, the first row naming it (every model call looks its model up)
_ROW_OF_NAME: Final[dict[tuple[ProviderName, str], ModelCapabilities]] = {}
for _row in MODEL_CAPABILITIES:
    for _name in (_row.model, *_row.aliases):
        _ROW_OF_NAME.setdefault((_row.provider, _name), _row)
del _row, _name


def context_window_of(provider: ProviderName, model: str) -> int:
    """The context window (tokens) of ``model``; :data:`DEFAULT_CONTEXT_WINDOW` for a model not in the table."""
    row = capabilities_of(provider, model)
    return DEFAULT_CONTEXT_WINDOW if row is None else row.context_window


def anthropic_thinking(model: str, effort: Effort | None, *, max_output_tokens: int) -> dict[str, object]:
    """The thinking fields of an Anthropic request body for ``model`` at ``effort`` (empty: none sent).

    Adaptive: ``thinking: {type: adaptive}`` and ``output_config.effort`` (``max`` sent as ``high`` where
    the model has no ``max``). Budget: ``low`` sends none; ``medium``/``high``/``max`` ask for 4k/16k/32k
    tokens, but never more than half of ``max_output_tokens`` (thinking counts against it, so the other
    half stays for the answer and its tool calls), and none when that leaves less than 1,024.
    """
    row = capabilities_of(ProviderName.ANTHROPIC, model)
    if row is None or effort is None:
        return {}
    if row.thinking is ThinkingForm.ADAPTIVE:
        chosen = Effort.HIGH if effort is Effort.MAX and not row.max_effort else effort
        return {"thinking": {"type": "adaptive"}, "output_config": {"effort": _ANTHROPIC_EFFORT[chosen]}}
    if row.thinking is ThinkingForm.BUDGET:
        budget = min(_THINKING_BUDGET.get(effort, 0), max_output_tokens // 2)
        if budget >= MIN_THINKING_BUDGET:
            return {"thinking": {"type": "enabled", "budget_tokens": budget}}
    return {}


def openai_wire(model: str) -> OpenAIWire:
    """The API OpenAI ``model`` is called through: its row's, else Chat Completions."""
    row = capabilities_of(ProviderName.OPENAI, model)
    return OpenAIWire.CHAT_COMPLETIONS if row is None else row.wire


def openai_reasoning_effort(model: str, effort: Effort | None) -> str | None:
    """The ``reasoning_effort`` to send to OpenAI ``model`` (``max`` as ``high``), or None: not a
    reasoning model, not a known model, or no effort asked."""
    row = capabilities_of(ProviderName.OPENAI, model)
    if row is None or effort is None or not row.reasoning_effort:
        return None
    return _OPENAI_EFFORT[effort]
