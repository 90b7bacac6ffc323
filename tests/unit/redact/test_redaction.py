"""The one redaction pipeline: loaded secrets, known key shapes, streaming, and the diagnostics scan."""

from __future__ import annotations

import itertools
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from codeflux.redact import (
    MIN_SECRET_LENGTH,
    REDACTED,
    Redactor,
    SecretKind,
    StreamRedactor,
    default_redactor,
    scan_for_secrets,
)

# Hypothesis keeps no example database in the repository.
PROPERTY = settings(database=None, deadline=None, max_examples=300)

ANTHROPIC_KEY = "sk-ant-api03-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv" * 3
OPENAI_KEY = "sk-proj-" + "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0" * 2
LEGACY_OPENAI_KEY = "sk-" + "a1B2c3D4e5F6g7H8i9J0" * 2
GITHUB_PAT = "github_pat_11ABCDEFG0123456789"
LOADED_KEY = "loaded-key-Qm9WZ3Jh2XpT7vLc"

KNOWN_SHAPES = [
    (SecretKind.ANTHROPIC_API_KEY, f"using {ANTHROPIC_KEY} now", ANTHROPIC_KEY),
    (SecretKind.OPENAI_API_KEY, f"key: '{OPENAI_KEY}'", OPENAI_KEY),
    (SecretKind.OPENAI_API_KEY, f"legacy {LEGACY_OPENAI_KEY} key", LEGACY_OPENAI_KEY),
    (SecretKind.AWS_ACCESS_KEY_ID, "aws id AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
    (SecretKind.GITHUB_TOKEN, "GH ghp_" + "x" * 36 + ".", "ghp_" + "x" * 36),
    (SecretKind.GITHUB_TOKEN, f"pat {GITHUB_PAT}_abcdefghijkl", GITHUB_PAT),
    (SecretKind.SLACK_TOKEN, "slack xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"),
    (SecretKind.SLACK_TOKEN, "slack xoxp-1234567890-abcdefghij", "xoxp-1234567890-abcdefghij"),
    (SecretKind.GOOGLE_API_KEY, "AIza" + "B" * 35, "AIza" + "B" * 35),
    (SecretKind.BEARER_TOKEN, "curl -H 'X: Bearer eyJhbGciOi.Jk12.abc'", "eyJhbGciOi.Jk12.abc"),
    (SecretKind.AUTHORIZATION_HEADER, "Authorization: Basic dXNlcjpwYXNz\nnext line", "dXNlcjpwYXNz"),
    (SecretKind.API_KEY_HEADER, "x-api-key: abc123def456\n", "abc123def456"),
    (SecretKind.URL_PASSWORD, "clone https://me:s3cr3tpass@example.com/repo.git", "s3cr3tpass"),
    (SecretKind.CREDENTIAL_ASSIGNMENT, "DB_PASSWORD=hunter2 ./run", "hunter2"),
    (SecretKind.CREDENTIAL_ASSIGNMENT, "https://x.test/cb?api_key=q1w2e3&page=2", "q1w2e3"),
    (SecretKind.CREDENTIAL_ASSIGNMENT, '{"client_secret": "a b c d"}', "a b c d"),
    (SecretKind.CREDENTIAL_ASSIGNMENT, "password: correcthorsebattery", "correcthorsebattery"),
]

PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDm1k3yJ0pZ8n1z7l0x4a2X6xY3o8u1w0C3c4V5b6n7mAAAAJgS2xVgEtsV\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)

ORDINARY_TEXT = [
    "commit 3f2a9c0d1e2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d on main",
    "task tsk_01HZX3M4N5P6Q7R8S9T0 is running in /tmp/worktrees/repo/tsk_01",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "disk-usage-report-for-monday and a risk-assessment-of-everything-here",
    "def connect(token: str, password: bytes) -> None: ...",
    "max_tokens=4096 input_tokens: 1234 tokens: 5",
    "if password == other:",
    "the bearer instrument was signed by the secretary",
    "http://localhost:8080/path?page=2 and ssh://git@example.com:22/repo",
    "plain prose with punctuation: yes, no; maybe! (really?)",
]


def redactor_with(*secrets: str) -> Redactor:
    redactor = Redactor()
    for secret in secrets:
        redactor.add_secret(secret)
    return redactor


def stream_through(redactor: Redactor, chunks: list[str]) -> str:
    stream = StreamRedactor(redactor)
    return "".join(stream.feed(chunk) for chunk in chunks) + stream.flush()


def split_at(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(min(max(c, 0), len(text)) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


# ----------------------------------------------------------------------------------- loaded secrets


def test_a_loaded_secret_is_hidden_wherever_it_appears() -> None:
    redactor = redactor_with(LOADED_KEY)
    text = f"{LOADED_KEY} at start, middle:{LOADED_KEY}:, end {LOADED_KEY}"
    assert redactor.redact(text) == f"{REDACTED} at start, middle:{REDACTED}:, end {REDACTED}"


def test_a_value_shorter_than_the_minimum_is_not_matched_exactly() -> None:
    short = "x" * (MIN_SECRET_LENGTH - 1)
    redactor = redactor_with(short, "        ")
    assert redactor.redact(f"text {short} and spaces        here") == f"text {short} and spaces        here"
    assert redactor.longest_secret_length == 0


def test_the_longest_loaded_secret_wins_over_a_secret_that_is_its_prefix() -> None:
    redactor = redactor_with("abcdefgh", "abcdefgh-and-more")
    assert redactor.redact("see abcdefgh-and-more!") == f"see {REDACTED}!"


def test_overlapping_loaded_secrets_leave_no_fragment_of_either() -> None:
    redactor = redactor_with("abcdefghij", "hijklmnopq")
    assert redactor.redact("<abcdefghijklmnopq>") == f"<{REDACTED}>"


def test_the_marker_does_not_reveal_the_length_of_what_it_hides() -> None:
    redactor = redactor_with("a" * 8, "b" * 80)
    assert redactor.redact("a" * 8) == redactor.redact("b" * 80) == REDACTED


def test_the_process_wide_redactor_is_one_object() -> None:
    assert default_redactor() is default_redactor()


# -------------------------------------------------------------------------------- known key shapes


@pytest.mark.parametrize(("kind", "text", "secret"), KNOWN_SHAPES, ids=[k.value for k, _, _ in KNOWN_SHAPES])
def test_a_known_key_shape_is_hidden_without_being_loaded(kind: SecretKind, text: str, secret: str) -> None:
    redacted = Redactor().redact(text)
    assert secret not in redacted
    assert REDACTED in redacted
    assert kind.value in scan_for_secrets(text, redactor=Redactor())


def test_an_assignment_keeps_its_name_and_hides_only_the_value() -> None:
    redactor = Redactor()
    assert redactor.redact("export OPENAI_API_KEY=abc123 && go") == f"export OPENAI_API_KEY={REDACTED} && go"
    assert redactor.redact('{"password": "pw", "u": "me"}') == f'{{"password": "{REDACTED}", "u": "me"}}'


def test_a_private_key_block_is_hidden_whole() -> None:
    assert Redactor().redact(f"before\n{PRIVATE_KEY}after") == f"before\n{REDACTED}\nafter"


def test_a_private_key_block_without_its_end_line_is_hidden_to_the_end_of_the_text() -> None:
    truncated = PRIVATE_KEY.split("-----END", maxsplit=1)[0]
    assert Redactor().redact("head\n" + truncated) == f"head\n{REDACTED}"


@pytest.mark.parametrize("text", ORDINARY_TEXT)
def test_ordinary_text_passes_through_unchanged(text: str) -> None:
    redactor = redactor_with(LOADED_KEY)
    assert redactor.redact(text) == text
    assert redactor.scan(text) == []


# ---------------------------------------------------------------------------------------- scanning


def test_scanning_reports_each_kind_once_and_never_a_value() -> None:
    redactor = redactor_with(LOADED_KEY)
    text = f"{ANTHROPIC_KEY} {ANTHROPIC_KEY} {LOADED_KEY} AKIAIOSFODNN7EXAMPLE"
    kinds = scan_for_secrets(text, redactor=redactor)
    assert kinds == ["anthropic-api-key", "aws-access-key-id", "loaded-secret"]
    reported = " ".join(kinds)
    assert not any(secret in reported for secret in (ANTHROPIC_KEY, LOADED_KEY, "AKIAIOSFODNN7EXAMPLE"))


def test_scanning_clean_text_finds_nothing() -> None:
    assert scan_for_secrets('{"version": "0.1.0", "tasks": 3}', redactor=Redactor()) == []


# --------------------------------------------------------------------------------------- streaming


def test_a_loaded_secret_split_at_every_offset_is_hidden_from_the_stream() -> None:
    redactor = redactor_with(LOADED_KEY)
    text = f"output {LOADED_KEY} done"
    for cut in range(1, len(text)):
        assert LOADED_KEY not in stream_through(redactor, [text[:cut], text[cut:]])


def test_a_known_key_split_at_every_offset_is_hidden_from_the_stream() -> None:
    text = f"export ANTHROPIC_KEY_VALUE {ANTHROPIC_KEY}\nnext"
    for cut in range(1, len(text)):
        output = stream_through(Redactor(), [text[:cut], text[cut:]])
        assert ANTHROPIC_KEY[:24] not in output
        assert ANTHROPIC_KEY[-24:] not in output


def test_a_private_key_written_line_by_line_never_shows_in_the_stream() -> None:
    chunks = [line + "\n" for line in ("build ok", *PRIVATE_KEY.splitlines(), "done")]
    output = stream_through(Redactor(), chunks)
    body_lines = PRIVATE_KEY.splitlines()[1:-1]
    assert not any(line in output for line in body_lines)
    assert output.startswith("build ok\n")
    assert output.endswith("done\n")


def test_a_stream_releases_text_as_it_goes_and_the_rest_at_flush() -> None:
    stream = StreamRedactor(redactor_with(LOADED_KEY))
    released = stream.feed("a" * 10_000)
    assert len(released) >= 10_000 - 300
    assert released + stream.flush() == "a" * 10_000


def test_ordinary_output_is_released_at_once_and_only_a_possible_secret_s_start_waits() -> None:
    stream = StreamRedactor(redactor_with(LOADED_KEY))
    assert stream.feed("collecting ...\n") == "collecting ...\n"  # nothing held back: the tail is visible now
    assert stream.feed("3 passed, 1 warning\n") == "3 passed, 1 warning\n"
    assert stream.feed(f"loaded {LOADED_KEY[:6]}") == "loaded "  # could be the loaded secret: held
    assert stream.feed(f"{LOADED_KEY[6:]} done\n") == "[REDACTED] done\n"
    assert stream.feed("key sk-ant-") == "key "  # could be an Anthropic key: held
    assert stream.feed("not-a-key") == ""  # still could (a key is 16+ such characters)
    assert stream.feed("\n") == "sk-ant-not-a-key\n"  # the line ended short of a key: released as it is
    assert stream.flush() == ""


def test_text_fed_after_a_flush_is_a_new_stream() -> None:
    stream = StreamRedactor(Redactor())
    assert stream.feed("first") + stream.flush() == "first"
    assert stream.feed("second") + stream.flush() == "second"


# ------------------------------------------------------------------------------------- properties

SECRET_ALPHABET = string.ascii_letters + string.digits + "-_./+=:@!%^*~ "
secrets_st = st.text(alphabet=SECRET_ALPHABET, min_size=MIN_SECRET_LENGTH, max_size=60).filter(
    lambda s: s.strip() != "" and s != "REDACTED"
)
surrounding_st = st.text(max_size=300)
cuts_st = st.lists(st.integers(min_value=0, max_value=1000), max_size=30)

KEY_EXAMPLES = st.sampled_from(
    [ANTHROPIC_KEY, OPENAI_KEY, "AKIAIOSFODNN7EXAMPLE", "ghp_" + "x1" * 18, "xoxb-1234567890-abcdefghij",
     "AIza" + "B" * 35, "Authorization: Basic dXNlcjpwYXNz", "password=hunter2hunter2"]
)  # fmt: skip


@PROPERTY
@given(secret=secrets_st, before=surrounding_st, after=surrounding_st, cuts=cuts_st)
def test_a_loaded_secret_split_anywhere_across_any_chunks_never_reaches_the_output(
    secret: str, before: str, after: str, cuts: list[int]
) -> None:
    redactor = redactor_with(secret)
    text = before + secret + after
    assert secret not in stream_through(redactor, split_at(text, cuts))


@PROPERTY
@given(key=KEY_EXAMPLES, before=surrounding_st, after=surrounding_st, cuts=cuts_st)
def test_a_known_key_split_anywhere_across_any_chunks_never_reaches_the_output(
    key: str, before: str, after: str, cuts: list[int]
) -> None:
    text = f"{before}\n{key}\n{after}"
    output = stream_through(Redactor(), split_at(text, cuts))
    assert key not in output
    assert Redactor().scan(output) == []


@PROPERTY
@given(pieces=st.lists(st.one_of(surrounding_st, KEY_EXAMPLES, st.sampled_from([LOADED_KEY, REDACTED]))))
def test_redaction_is_idempotent(pieces: list[str]) -> None:
    redactor = redactor_with(LOADED_KEY)
    once = redactor.redact("".join(pieces))
    assert redactor.redact(once) == once


@PROPERTY
@given(
    pieces=st.lists(st.one_of(surrounding_st, KEY_EXAMPLES, st.just(LOADED_KEY)), max_size=8)
)
def test_nothing_a_scan_would_flag_survives_redaction(pieces: list[str]) -> None:
    redactor = redactor_with(LOADED_KEY)
    assert redactor.scan(redactor.redact("".join(pieces))) == []


@PROPERTY
@given(text=st.text(max_size=500))
def test_text_without_secrets_is_unchanged(text: str) -> None:
    redactor = redactor_with(LOADED_KEY)
    assume(redactor.scan(text) == [])
    assert redactor.redact(text) == text


@PROPERTY
@given(text=st.text(max_size=500), cuts=cuts_st)
def test_streaming_text_without_secrets_gives_it_back_unchanged(text: str, cuts: list[int]) -> None:
    redactor = redactor_with(LOADED_KEY)
    assume(redactor.scan(text) == [])
    assert stream_through(redactor, split_at(text, cuts)) == text
