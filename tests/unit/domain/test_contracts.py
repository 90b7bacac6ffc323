"""Atom contracts from the syntax tree (issue 17, stages 5 and 10): the effect table, module-level state, the
contract's shape and documented raises — each row of the documented table shown on a small module."""

from __future__ import annotations

import textwrap

import pytest

from codeflux.domain.contracts import (
    EFFECT_TABLE,
    EFFECT_TABLE_VERSION,
    AtomEffect,
    documented_raises,
    module_facts,
    shape_of,
)

E = AtomEffect


def effects_of(body: str, *, header: str = "", name: str = "f") -> tuple[AtomEffect, ...]:
    source = textwrap.dedent(header) + "\n\ndef f(x):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    shape = shape_of(module_facts(source), name, is_method=False)
    assert shape is not None
    return shape.effect_kinds


@pytest.mark.parametrize(("header", "body", "expected"), [
    ("", "return open(x).read()", (E.FILE,)),
    ("from pathlib import Path", "return Path(x).read_text()", (E.FILE,)),
    ("", "x.write_bytes(b'')", (E.FILE,)),
    ("import os.path", "return os.path.exists(x)", (E.FILE,)),
    ("import shutil", "shutil.rmtree(x)", (E.FILE,)),
    ("from os import remove as rm", "rm(x)", (E.FILE,)),
    ("import socket", "return socket.create_connection(x)", (E.NETWORK,)),
    ("import urllib.request", "return urllib.request.urlopen(x)", (E.NETWORK,)),
    ("import requests", "return requests.get(x)", (E.NETWORK,)),
    ("import httpx as h", "return h.get(x)", (E.NETWORK,)),
    ("import subprocess", "subprocess.run([x])", (E.PROCESS,)),
    ("import os", "os.system(x)", (E.PROCESS,)),
    ("import os", "os.execvp(x, [x])", (E.PROCESS,)),
    ("import os", "return os.environ['HOME']", (E.ENV,)),
    ("import os", "return os.getenv(x)", (E.ENV,)),
    ("from os import environ", "return environ.get(x)", (E.ENV,)),
    ("", "global COUNT\nCOUNT = x", (E.GLOBAL_STATE,)),
    ("CACHE = {}", "CACHE[x] = 1", (E.GLOBAL_STATE,)),
    ("SEEN = []", "SEEN.append(x)", (E.GLOBAL_STATE,)),
    ("import time", "return time.time()", (E.CLOCK,)),
    ("from datetime import datetime", "return datetime.now()", (E.CLOCK,)),
    ("import datetime as dt", "return dt.date.today()", (E.CLOCK,)),
    ("import random", "return random.choice(x)", (E.RANDOMNESS,)),
    ("import secrets", "return secrets.token_hex(x)", (E.RANDOMNESS,)),
    ("from uuid import uuid4", "return uuid4()", (E.RANDOMNESS,)),
    ("import os, time", "os.getenv(x)\nreturn time.monotonic()", (E.ENV, E.CLOCK)),
])
def test_each_row_of_the_effect_table_is_inferred_through_the_modules_imports(
        header: str, body: str, expected: tuple[AtomEffect, ...]) -> None:
    assert effects_of(body, header=header) == expected


@pytest.mark.parametrize(("header", "body"), [
    ("", "return x + 1"),
    ("import math", "return math.sqrt(x)"),
    ("", "seen = []\nseen.append(x)\nreturn seen"),  # a local list is not module state
    ("CACHE = {}", "CACHE = {x: 1}\nreturn CACHE"),  # binds its own local CACHE
    ("", "def open(p):\n    return p\nreturn open(x)"),  # a local open shadows the builtin
    ("", "return x.items()"),
    ("import time as clock", "return clock.__name__"),  # a module named, no call
])
def test_what_the_table_does_not_list_has_no_effect(header: str, body: str) -> None:
    assert effects_of(body, header=header) == ()


def test_the_table_has_a_version_and_a_row_for_every_effect_but_global_state_and_stage_30_s_own() -> None:
    assert EFFECT_TABLE_VERSION == "1"
    # global state is read from the syntax tree; dynamic code and deserialisation from stage 30's capability map
    assert set(EFFECT_TABLE) == set(AtomEffect) - {E.GLOBAL_STATE, E.DYNAMIC_CODE, E.DESERIALISATION}


def test_module_state_constants_code_and_mutable_names_follow_the_documented_rule() -> None:
    source = textwrap.dedent("""
        import os
        from pathlib import Path
        LIMIT = 10
        limit = LIMIT * 2
        NAMES = ("a", "b")
        FROZEN = frozenset({"x", "y"})
        CACHE = {}
        ITEMS = [1, 2]
        HOME = os.getenv("HOME")
        TWICE = 1
        TWICE = 2
        COUNT = 0
        COUNT += 1
        RESET = 0
        for LOOP in range(3):
            pass

        def f():
            global RESET
            RESET = 1

        class Thing:
            pass
        """)
    facts = module_facts(source)
    assert facts.constants == {"LIMIT", "limit", "NAMES", "FROZEN"}
    assert facts.mutable == {"CACHE", "ITEMS", "HOME", "TWICE", "COUNT", "RESET", "LOOP"}
    assert facts.code == {"os", "Path", "f", "Thing"}


def test_a_pure_function_reading_constants_and_code_has_no_purity_finding() -> None:
    source = "import math\nLIMIT = 10\n\n\ndef f(x: int) -> float:\n    return math.sqrt(min(x, LIMIT))\n"
    shape = shape_of(module_facts(source), "f", is_method=False)
    assert shape is not None and shape.purity == () and shape.missing_annotations == ()


def test_purity_findings_name_global_mutable_reads_and_effects_with_their_lines() -> None:
    source = textwrap.dedent("""
        import time
        HISTORY = []

        def f(x: int) -> int:
            global TOTAL
            TOTAL = x
            return len(HISTORY) + int(time.time())
        """)
    shape = shape_of(module_facts(source), "f", is_method=False)
    assert shape is not None
    assert [finding.describe() for finding in shape.purity] == [
        "declares global TOTAL (line 6)", "has effect clock: time.time (line 8)",
        "reads module-level mutable HISTORY (line 8)"]


def test_the_shape_lists_missing_annotations_leaving_out_self_cls_and_an_init_return() -> None:
    source = textwrap.dedent("""
        class Stats:
            def __init__(self, values: list[float]):
                self.values = values

            def scaled(self, factor, *rest: int, **options) -> float:
                return 1.0

            @classmethod
            def build(cls, n: int) -> "Stats":
                return cls([])

            @staticmethod
            def helper(self):
                return self
        """)
    facts = module_facts(source)
    init = shape_of(facts, "Stats.__init__", is_method=True)
    scaled = shape_of(facts, "Stats.scaled", is_method=True)
    build = shape_of(facts, "Stats.build", is_method=True)
    helper = shape_of(facts, "Stats.helper", is_method=True)
    assert init is not None and init.missing_annotations == ()
    assert scaled is not None and scaled.missing_annotations == ("parameter factor", "parameter options")
    assert build is not None and build.missing_annotations == () and build.returns == "'Stats'"
    assert helper is not None and helper.missing_annotations == ("parameter self", "return")  # static: no self
    assert shape_of(facts, "Stats.missing", is_method=True) is None


@pytest.mark.parametrize(("docstring", "expected"), [
    ("Add.\n\nArgs:\n    a: one\n\nRaises:\n    ValueError: when a < 0\n        and more.\n    KeyError: x\n\n"
     "Returns:\n    the sum", ("ValueError", "KeyError")),
    ("Add.\n\nRaises\n------\nValueError\n    If a < 0.\nTypeError\n    If a is not a number.\n\nReturns\n-------\n"
     "int\n", ("ValueError", "TypeError")),
    ("Add.\n\n:raises ValueError: when a < 0\n:raise KeyError: never", ("ValueError", "KeyError")),
    ("Add. Raises nothing worth naming.", ()),
    (None, ()),
])
def test_documented_raises_reads_google_numpy_and_sphinx_sections(docstring: str | None,
                                                                  expected: tuple[str, ...]) -> None:
    assert documented_raises(docstring) == expected
