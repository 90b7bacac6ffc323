"""The re-executed process reads the provider keys handed to it through a pipe only when the hand-off names its
own pid, closes the pipe, drops the variable and registers each value with the redactor; a hand-off made for
another process (set by hand, inherited) is ignored without reading any descriptor."""

from __future__ import annotations

import os

import pytest

from codeflux.redact import REDACTED, default_redactor
from codeflux.worker import hardening
from tests.fixtures.provider_servers import a_test_key

pytestmark = pytest.mark.security


def _pipe_holding(records: bytes) -> int:
    read_end, write_end = os.pipe()
    os.write(write_end, records)
    os.close(write_end)
    return read_end


def test_a_hand_off_for_this_process_is_read_once_closed_and_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    key, stray = a_test_key(), a_test_key()
    fd = _pipe_holding(f"ANTHROPIC_API_KEY\x00{key}\x00PATH\x00{stray}\x00".encode())
    monkeypatch.setenv(hardening.HANDOFF_VARIABLE, f"{fd}:{os.getpid()}")

    hardening._receive_handed_off_keys()

    assert hardening.HANDOFF_VARIABLE not in os.environ
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    assert hardening.take_handed_off_keys() == {"ANTHROPIC_API_KEY": key}  # only key variables are taken
    assert hardening.take_handed_off_keys() == {}  # once
    assert default_redactor().redact(f"key {key}") == f"key {REDACTED}"


def test_a_hand_off_for_another_pid_is_ignored_and_its_descriptor_left_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    key = a_test_key()
    fd = _pipe_holding(f"ANTHROPIC_API_KEY\x00{key}\x00".encode())
    try:
        monkeypatch.setenv(hardening.HANDOFF_VARIABLE, f"{fd}:{os.getpid() + 1}")

        hardening._receive_handed_off_keys()

        assert hardening.HANDOFF_VARIABLE not in os.environ
        assert hardening.take_handed_off_keys() == {}
        assert os.read(fd, 4096) == f"ANTHROPIC_API_KEY\x00{key}\x00".encode()  # untouched, still open
    finally:
        os.close(fd)


def test_the_names_that_carry_a_key_for_codeflux() -> None:
    assert [name for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEFLUX_ANTHROPIC_API_KEY",
                              "CODEFLUX_OPENAI_COMPATIBLE_API_KEY", "CODEFLUX__API_KEY", "CODEFLUX_HOME",
                              "MISTRAL_API_KEY", "anthropic_api_key")
            if hardening.is_provider_key_variable(name)] == [
        "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CODEFLUX_ANTHROPIC_API_KEY", "CODEFLUX_OPENAI_COMPATIBLE_API_KEY"]


def test_a_record_cut_short_is_never_read_as_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    whole, cut = a_test_key(), a_test_key()
    for tail in (f"OPENAI_API_KEY\x00{cut[:10]}", "OPENAI_API_KEY\x00", "OPENAI_API"):
        fd = _pipe_holding(f"ANTHROPIC_API_KEY\x00{whole}\x00{tail}".encode())
        monkeypatch.setenv(hardening.HANDOFF_VARIABLE, f"{fd}:{os.getpid()}")
        hardening._receive_handed_off_keys()
        assert hardening.take_handed_off_keys() == {"ANTHROPIC_API_KEY": whole}, tail
