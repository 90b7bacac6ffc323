"""The known shapes of credentials that are redacted even when codeflux never loaded them.

Each pattern names a :class:`SecretKind` and marks the part to hide with a ``secret`` group (for an
``api_key=…`` assignment only the value is hidden, so the reader still sees what was there).

Every pattern is written so that streaming can be exact (see ``pipeline.StreamRedactor``):

- whatever comes before the ``secret`` group is bounded (``[ \\t]{0,4}``, never ``\\s*``), so the part of a
  match that is still undecided while text arrives is shorter than :data:`PATTERN_LOOKBACK`;
- once a match exists it only grows as more text arrives (greedy tails, no trailing look-ahead);
- a *guard* (a look-behind that keeps ``disk-usage`` from looking like an ``sk-`` key) is kept apart
  from the body, so the streamer can decide what to hold back without it: a guard only ever removes
  matches, so ignoring it holds back more, never less;
- no value pattern matches a value that is already ``[REDACTED]``, which keeps redaction idempotent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

import regex as partial_regex

__all__ = ["KEY_PATTERNS", "PATTERN_LOOKBACK", "KeyPattern", "SecretKind"]

_NO_FLAGS = re.RegexFlag(0)

PATTERN_LOOKBACK = 256
"""Longest prefix of any pattern match that can still be undecided; the streamer holds this much back."""


class SecretKind(StrEnum):
    """What kind of secret a redaction hid; reported by ``scan_for_secrets`` instead of the value."""

    # The values below are names of kinds, not credentials.

    LOADED_SECRET = "loaded-secret"  # noqa: S105
    ANTHROPIC_API_KEY = "anthropic-api-key"
    OPENAI_API_KEY = "openai-api-key"
    AWS_ACCESS_KEY_ID = "aws-access-key-id"
    GITHUB_TOKEN = "github-token"  # noqa: S105
    SLACK_TOKEN = "slack-token"  # noqa: S105
    GOOGLE_API_KEY = "google-api-key"
    PRIVATE_KEY_BLOCK = "private-key-block"
    BEARER_TOKEN = "bearer-token"  # noqa: S105
    AUTHORIZATION_HEADER = "authorization-header"
    API_KEY_HEADER = "api-key-header"
    URL_PASSWORD = "url-password"  # noqa: S105
    CREDENTIAL_ASSIGNMENT = "credential-assignment"


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyPattern:
    """One credential shape: ``guard`` (a look-behind, may be empty) then ``body`` with a ``secret`` group."""

    kind: SecretKind
    body: str
    guard: str = ""
    flags: re.RegexFlag = _NO_FLAGS
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    unguarded: re.Pattern[str] = field(init=False, repr=False, compare=False)
    partial: partial_regex.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.guard + self.body, self.flags))
        object.__setattr__(self, "unguarded", re.compile(self.body, self.flags))
        # The same body in the ``regex`` module, which can say where a match could still begin once more text
        # arrives (``partial=True``): what a stream must hold back, and nothing more.
        object.__setattr__(self, "partial", partial_regex.compile(self.body, int(self.flags) | partial_regex.VERSION0))
        if "secret" not in self.regex.groupindex:
            raise ValueError(f"pattern for {self.kind} has no 'secret' group")


_NOT_REDACTED = r"(?!\[REDACTED\])"
_VALUE = r"[^\s\"'`,;&<>]"
_VALUE_START = r"[^\s\"'`,;&<>=]"
_HEADER_VALUE = rf"(?P<secret>{_NOT_REDACTED}[^\s][^\r\n]*)"
_SEPARATOR = r"[ \t]{0,4}"
_LABEL = (
    r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?token"
    r"|access[_-]?token|refresh[_-]?token|secret|token|password|passwd|credentials?)"
)
_PRIVATE_KEY_LINE = r"PRIVATE KEY(?: BLOCK)?-----"

KEY_PATTERNS: tuple[KeyPattern, ...] = (
    KeyPattern(
        kind=SecretKind.ANTHROPIC_API_KEY,
        guard=r"(?<![A-Za-z0-9_-])",
        body=r"(?P<secret>sk-ant-[A-Za-z0-9_-]{16,})",
    ),
    KeyPattern(
        kind=SecretKind.OPENAI_API_KEY,
        guard=r"(?<![A-Za-z0-9_-])",
        body=r"(?P<secret>sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,})",
    ),
    KeyPattern(
        kind=SecretKind.AWS_ACCESS_KEY_ID,
        guard=r"(?<![A-Z0-9])",
        body=r"(?P<secret>(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA)[A-Z0-9]{16})",
    ),
    KeyPattern(
        kind=SecretKind.GITHUB_TOKEN,
        guard=r"(?<![A-Za-z0-9_])",
        body=r"(?P<secret>gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    KeyPattern(
        kind=SecretKind.SLACK_TOKEN,
        guard=r"(?<![A-Za-z0-9])",
        body=r"(?P<secret>xox[abeprs]-[A-Za-z0-9-]{10,})",
    ),
    KeyPattern(
        kind=SecretKind.GOOGLE_API_KEY,
        guard=r"(?<![A-Za-z0-9_-])",
        body=r"(?P<secret>AIza[0-9A-Za-z_-]{35})",
    ),
    KeyPattern(
        # A block whose END line has not arrived is hidden to the end of the text: half a key is a key.
        kind=SecretKind.PRIVATE_KEY_BLOCK,
        body=(
            rf"(?P<secret>-----BEGIN[A-Z0-9 ]{{0,40}} {_PRIVATE_KEY_LINE}"
            rf".*?(?:-----END[A-Z0-9 ]{{0,40}} {_PRIVATE_KEY_LINE}|\Z))"
        ),
        flags=re.DOTALL,
    ),
    KeyPattern(
        kind=SecretKind.BEARER_TOKEN,
        guard=r"(?<![A-Za-z0-9])",
        # A token has a digit or symbol within its first 65 characters, so prose such as "the bearer
        # instrument" stays readable; the bound keeps the undecided part short for streaming.
        body=(
            rf"[Bb]earer[ \t]{{1,4}}(?P<secret>{_NOT_REDACTED}(?=[A-Za-z]{{0,64}}[0-9._~+/=-])"
            rf"[A-Za-z0-9._~+/=-]{{8,}})"
        ),
    ),
    KeyPattern(
        kind=SecretKind.AUTHORIZATION_HEADER,
        guard=r"(?<![A-Za-z0-9])",
        body=rf"(?:proxy-)?authorization[\"']?{_SEPARATOR}:{_SEPARATOR}{_HEADER_VALUE}",
        flags=re.IGNORECASE,
    ),
    KeyPattern(
        kind=SecretKind.API_KEY_HEADER,
        guard=r"(?<![A-Za-z0-9])",
        body=rf"(?:x-api-key|x-goog-api-key|api-key)[\"']?{_SEPARATOR}:{_SEPARATOR}{_HEADER_VALUE}",
        flags=re.IGNORECASE,
    ),
    KeyPattern(
        kind=SecretKind.URL_PASSWORD,
        guard=r"(?<![A-Za-z0-9+.-])",
        body=rf"[a-z][a-z0-9+.-]{{1,16}}://[^\s:/?#@]{{1,64}}:(?P<secret>{_NOT_REDACTED}[^\s/?#@]{{1,128}})@",
        flags=re.IGNORECASE,
    ),
    KeyPattern(
        # `password=…`, `API_KEY = "…"`, `token=…&` — any value after `=`.
        kind=SecretKind.CREDENTIAL_ASSIGNMENT,
        body=rf"{_LABEL}[\"']?{_SEPARATOR}={_SEPARATOR}[\"']?(?P<secret>{_NOT_REDACTED}{_VALUE_START}{_VALUE}*)",
        flags=re.IGNORECASE,
    ),
    KeyPattern(
        # `"password": "…"` (JSON, YAML with quotes): any quoted value after `:`.
        kind=SecretKind.CREDENTIAL_ASSIGNMENT,
        body=rf"{_LABEL}[\"']?{_SEPARATOR}:{_SEPARATOR}[\"'](?P<secret>{_NOT_REDACTED}[^\"'\r\n]+)",
        flags=re.IGNORECASE,
    ),
    KeyPattern(
        # `password: hunter2hunter2` unquoted after `:` needs 8+ characters, so that source code such as
        # `token: str` or `password: bytes` reaching a prompt keeps its type annotations.
        kind=SecretKind.CREDENTIAL_ASSIGNMENT,
        body=rf"{_LABEL}{_SEPARATOR}:{_SEPARATOR}(?P<secret>{_NOT_REDACTED}{_VALUE}{{8,}})",
        flags=re.IGNORECASE,
    ),
)
