"""Which atoms stage 12 fuzzes (issue 17): those taking text, bytes, a path or JSON, or named to parse, decode, load
or read — and with which documented raises. Pure: read from the atom's source."""

from __future__ import annotations

from codeflux.domain.atoms import atoms_between
from codeflux.pipeline.fuzz import FuzzPlan, fuzz_plan

SOURCE = '''import os
from pathlib import Path
from typing import Annotated, Optional


def parse(text: str) -> int:
    """Parse.

    Raises:
        ValueError: bad text.
        json.JSONDecodeError: bad JSON.
    """
    return int(text)


def maybe(path: Optional[Path] = None, *, strict: bool = False) -> bool:
    return path is None


def union(data: "bytes | None") -> int:
    return 0


def tagged(where: Annotated[os.PathLike[str], "a file"]) -> int:
    return 0


def payload(value: JSONValue) -> int:
    return 0


def join(parts: list[str]) -> str:
    return "".join(parts)


def read_counts(n: int) -> int:
    return n


def decodeBytes(n: int) -> int:
    return n


def from_parts(n: int) -> int:
    return n


def thread_count(n: int) -> int:
    return n


async def load_later(text: str) -> str:
    return text


class Reader:
    @property
    def decoded(self) -> str:
        return ""

    @staticmethod
    def decode(raw: bytes) -> str:
        return raw.decode()

    def load(self, raw: bytes) -> str:
        return ""
'''


def plans() -> dict[str, FuzzPlan | str]:
    found = atoms_between("pkg/codec.py", None, SOURCE, module="pkg.codec")
    return {atom.local_name: fuzz_plan(atom, SOURCE) for atom in found.atoms}


def test_text_bytes_path_and_json_parameters_are_fuzzed_whatever_their_default() -> None:
    found = plans()
    parse = found["parse"]
    assert isinstance(parse, FuzzPlan) and parse.inputs == ("text",) and parse.call == "function"
    assert parse.documented == ("ValueError", "json.JSONDecodeError")
    assert parse.allowed == ("ValueError", "json.JSONDecodeError", "JSONDecodeError")
    maybe = found["maybe"]
    assert isinstance(maybe, FuzzPlan) and maybe.inputs == ("path",) and maybe.documented == ()
    for name in ("union", "tagged"):
        assert isinstance(found[name], FuzzPlan), found[name]
    payload = found["payload"]
    assert isinstance(payload, FuzzPlan) and payload.json_inputs == ("value",)


def test_names_that_parse_decode_load_or_read_are_fuzzed_and_other_atoms_say_why_not() -> None:
    found = plans()
    for name in ("read_counts", "decodeBytes", "from_parts"):
        plan = found[name]
        assert isinstance(plan, FuzzPlan) and plan.inputs == () and "says it parses" in plan.because, name
    for name in ("join", "thread_count"):  # a list of str is not a text input; "thread" is not "read"
        assert str(found[name]).startswith("not fuzzed: it does not parse or decode"), name
    assert found["load_later"] == "skipped: an async function (calling it does not run it)"
    assert found["Reader.decoded"] == "skipped: a property (not called with arguments)"
    static, method = found["Reader.decode"], found["Reader.load"]
    assert isinstance(static, FuzzPlan) and static.call == "static" and static.local == "Reader.decode"
    assert isinstance(method, FuzzPlan) and method.call == "instance" and method.module == "pkg.codec"
