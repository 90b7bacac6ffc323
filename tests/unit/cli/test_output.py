"""Colour only on a terminal without NO_COLOR; money in --json as exact decimal strings, unknown as null."""

from __future__ import annotations

import io
import os

from codeflux.api.v1 import common_pb2
from codeflux.cli.documents import money_document
from codeflux.cli.output import colour_allowed, stdout_reader_gone


def test_colour_is_allowed_only_on_a_terminal_without_no_color() -> None:
    controller, terminal = os.openpty()
    with os.fdopen(terminal, "w", encoding="utf-8") as tty:
        assert colour_allowed(tty, {}) is True  # the control: a real terminal, nothing asking for plain text
        assert colour_allowed(tty, {"NO_COLOR": "1"}) is False
        assert colour_allowed(tty, {"TERM": "dumb"}) is False
        assert colour_allowed(tty, {"NO_COLOR": ""}) is True  # no-color.org: only a non-empty value counts
    os.close(controller)
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as pipe:
        assert colour_allowed(pipe, {}) is False
    os.close(read_end)
    assert colour_allowed(io.StringIO(), {}) is False


def test_money_is_an_exact_decimal_string_and_unknown_is_null() -> None:
    def known(minor: int, places: int) -> common_pb2.MaybeMoney:
        amount = common_pb2.Money(currency="USD", minor_units=minor, decimal_places=places, display="x")
        return common_pb2.MaybeMoney(known=True, amount=amount)

    assert money_document(known(123, 6)) == {"amount": "0.000123", "currency": "USD", "minor_units": 123}
    assert money_document(known(-1050, 2)) == {"amount": "-10.50", "currency": "USD", "minor_units": -1050}
    assert money_document(known(7, 0)) == {"amount": "7", "currency": "USD", "minor_units": 7}
    assert money_document(known(0, 2)) == {"amount": "0.00", "currency": "USD", "minor_units": 0}
    assert money_document(common_pb2.MaybeMoney(known=False, unknown_reason="no price")) is None


def test_a_pipe_counts_as_gone_only_once_its_reader_closed() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as pipe:
        assert stdout_reader_gone(pipe) is False  # the control: someone still reads
        os.close(read_end)
        assert stdout_reader_gone(pipe) is True
    controller, terminal = os.openpty()
    with os.fdopen(terminal, "w", encoding="utf-8") as tty:
        assert stdout_reader_gone(tty) is False
    os.close(controller)
    assert stdout_reader_gone(io.StringIO()) is False
