"""A Secret never shows, serializes or copies its value out by accident; reveal() is the only way out."""

from __future__ import annotations

import copy
import json
import logging
import pickle

import pytest

from codeflux.credentials import REDACTED, Secret

VALUE = "sk-ant-api03-not-a-real-key-0123456789"

pytestmark = pytest.mark.security


def test_reveal_gives_back_the_value() -> None:
    assert Secret(VALUE).reveal() == VALUE


WAYS_TO_SHOW = {
    "str": str,
    "repr": repr,
    "format": format,
    "f-string": lambda s: f"{s}",
    "f-string-repr": lambda s: f"{s!r}",
    "format-spec": lambda s: f"{s:>60}",
    "percent": lambda s: "%s" % (s,),  # noqa: UP031 - the old formatting path is the one under test
    "str.format": "{}".format,
    "in-list": lambda s: str([s]),
    "in-dict": lambda s: str({"key": s}),
    "in-exception": lambda s: str(ValueError(s)),
}


@pytest.mark.parametrize("show", WAYS_TO_SHOW.values(), ids=WAYS_TO_SHOW.keys())
def test_every_way_of_printing_a_secret_shows_the_marker(show: object) -> None:
    assert callable(show)
    shown = show(Secret(VALUE))
    assert VALUE not in shown
    assert REDACTED in shown


def test_a_secret_in_a_log_message_shows_the_marker(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        logging.getLogger("codeflux.test").info("using %s and %r", Secret(VALUE), Secret(VALUE))
    assert VALUE not in caplog.text
    assert f"using {REDACTED} and {REDACTED}" in caplog.text


def test_json_refuses_a_secret() -> None:
    with pytest.raises(TypeError, match="not JSON serializable") as raised:
        json.dumps({"key": Secret(VALUE)})
    assert VALUE not in str(raised.value)


def test_json_with_a_str_fallback_writes_the_marker() -> None:
    assert json.dumps({"key": Secret(VALUE)}, default=str) == f'{{"key": "{REDACTED}"}}'


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickling_a_secret_raises(protocol: int) -> None:
    with pytest.raises(TypeError, match="cannot be pickled") as raised:
        pickle.dumps(Secret(VALUE), protocol=protocol)
    assert VALUE not in str(raised.value)


def test_the_state_hooks_do_not_hand_out_the_value() -> None:
    secret = Secret(VALUE)
    with pytest.raises(TypeError):
        secret.__getstate__()
    with pytest.raises(TypeError):
        secret.__reduce_ex__(2)
    with pytest.raises(TypeError):
        vars(secret)
    assert not hasattr(secret, "__dict__")


def test_copying_a_secret_gives_the_same_secret_without_exposing_it() -> None:
    secret = Secret(VALUE)
    assert copy.copy(secret) is secret
    assert copy.deepcopy({"k": secret})["k"] is secret


def test_equal_values_make_equal_secrets_and_a_secret_never_equals_its_plain_text() -> None:
    assert Secret(VALUE) == Secret(VALUE)
    assert Secret(VALUE) != Secret(VALUE + "x")
    assert Secret(VALUE) != VALUE
    assert VALUE != Secret(VALUE)  # noqa: SIM300 - the plain string on the left is the case under test


def test_a_secret_is_unhashable_so_no_hash_of_the_value_is_exposed() -> None:
    with pytest.raises(TypeError):
        hash(Secret(VALUE))


def test_a_secret_is_immutable() -> None:
    secret = Secret(VALUE)
    with pytest.raises(AttributeError):
        secret._value = "other"
    with pytest.raises(AttributeError):
        del secret._value
    assert secret.reveal() == VALUE


def test_a_secret_cannot_be_subclassed_to_change_how_it_prints() -> None:
    with pytest.raises(TypeError):

        class Leaky(Secret):  # type: ignore[misc]
            def __str__(self) -> str:
                return self.reveal()


def test_a_secret_holds_only_text() -> None:
    with pytest.raises(TypeError, match="holds a str"):
        Secret(b"bytes")  # type: ignore[arg-type]
