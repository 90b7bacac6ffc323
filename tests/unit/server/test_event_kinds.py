"""The browser's view of the event registry: the generated kind list, the proto enum, and what the web
client names.

The web client names kinds only through ``static/event_kinds.js`` (generated from the registry) and reads
payload keys the registry declares; renaming a key or a kind in the registry fails here instead of
silently blanking a timeline card.
"""

from __future__ import annotations

import re
from pathlib import Path

from codeflux.api.v1 import product_pb2
from codeflux.domain.events import EventKind, event_payload_keys
from codeflux.domain.pipeline.stages import STAGES
from codeflux.server import event_kinds
from codeflux.server.event_kinds import WEB_CLIENT_MODULE, render_event_kinds_module

STATIC = Path(event_kinds.__file__).resolve().parent / "static"

# How the web client refers to a payload: the parameter the card builders get (``payload``), and the
# stored authority decision a resolved approval card reads (``decision``).
_PAYLOAD_KEY_READS = (
    re.compile(r"\b(?:payload|decision)\.([A-Za-z_]\w*)"),
    re.compile(r"\b(?:payload|decision)\[\s*[\"']([^\"']+)[\"']\s*\]"),
    re.compile(r"[\"']([^\"']+)[\"']\s+in\s+(?:payload|decision)\b"),
)
_KIND_REFERENCE = re.compile(r"\bEventKind\.([A-Za-z_]\w*)")
_KIND_COMPARED_WITH_TEXT = re.compile(r"\bevent\.kind\s*[!=]==?\s*[\"'`]")
_STRING_LITERAL = re.compile(r"\"((?:[^\"\\\n]|\\.)*)\"|'((?:[^'\\\n]|\\.)*)'")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def web_client_sources() -> dict[str, str]:
    """Every hand-written module of the web client, comments removed."""
    return {path.name: _COMMENT.sub("", path.read_text(encoding="utf-8"))
            for path in sorted(STATIC.glob("*.js")) if path.name != WEB_CLIENT_MODULE}


def kinds_the_registry_lacks(source: str) -> set[str]:
    """Kinds ``source`` names that the registry does not have (or names other than through EventKind)."""
    names = {kind.name for kind in EventKind}
    values = {kind.value for kind in EventKind}
    lacking = {f"EventKind.{name}" for name in _KIND_REFERENCE.findall(source)} - {f"EventKind.{n}" for n in names}
    literals = {a or b for a, b in _STRING_LITERAL.findall(source)}
    lacking |= {f"literal {value!r} (name it through EventKind)" for value in literals & values}
    lacking |= {f"event.kind compared with text at {m.start()}" for m in _KIND_COMPARED_WITH_TEXT.finditer(source)}
    return lacking


def keys_the_registry_lacks(source: str) -> set[str]:
    known = {key for kind in EventKind for key in event_payload_keys(kind)}
    read = {key for pattern in _PAYLOAD_KEY_READS for key in pattern.findall(source)}
    return read - known


def test_the_committed_web_client_module_is_what_the_registry_renders() -> None:
    assert (STATIC / WEB_CLIENT_MODULE).read_text(encoding="utf-8") == render_event_kinds_module()


def test_the_web_client_module_lists_every_kind_and_its_keys() -> None:
    text = render_event_kinds_module()
    for kind in EventKind:
        assert f'  {kind.name}: "{kind.value}",' in text
        assert f'"{kind.value}": Object.freeze(["{event_payload_keys(kind)[0]}"' in text


def test_the_web_client_module_names_every_stage_with_its_number_and_phase_in_stage_order() -> None:
    text = render_event_kinds_module()
    table = text[text.index("export const STAGE_PHASES"):]
    rows = re.findall(r'^  "([a-z-]+)": Object\.freeze\(\[(\d+), "([A-G])", "([A-Za-z ]+)"\]\),$', table, re.MULTILINE)
    assert rows == [(s.name.value, str(s.number), s.phase.value, s.phase.label) for s in STAGES]
    assert len(rows) == 37 and rows[12][0] == "atom-mutation" and rows[12][2:] == ("B", "Atoms")


def test_the_proto_event_kinds_are_the_registry() -> None:
    values = product_pb2.EventKind.DESCRIPTOR.values
    assert {value.name for value in values if value.number} == {f"EVENT_KIND_{kind.name}" for kind in EventKind}
    assert [value.name for value in values if not value.number] == ["EVENT_KIND_UNSPECIFIED"]
    assert "event_kind" in product_pb2.SessionEvent.DESCRIPTOR.fields_by_name


def test_the_web_client_names_only_kinds_the_registry_has() -> None:
    sources = web_client_sources()
    assert "timeline.js" in sources and "EventKind." in sources["timeline.js"]
    assert {name: lacking for name, source in sources.items() if (lacking := kinds_the_registry_lacks(source))} == {}


def test_the_web_client_reads_only_payload_keys_the_registry_has() -> None:
    sources = web_client_sources()
    read = {key for source in sources.values() for pattern in _PAYLOAD_KEY_READS for key in pattern.findall(source)}
    assert {"request_id", "cost", "outcome", "decided_by"} <= read  # the scan sees the reads it guards
    assert {name: lacking for name, source in sources.items() if (lacking := keys_the_registry_lacks(source))} == {}


def test_a_kind_or_key_the_registry_lacks_is_caught() -> None:
    assert kinds_the_registry_lacks("CARD_BUILDERS[EventKind.TASK_DELETED] = gone;") == {"EventKind.TASK_DELETED"}
    assert kinds_the_registry_lacks('const builders = { "task-created": created };') == {
        "literal 'task-created' (name it through EventKind)"}
    assert kinds_the_registry_lacks('if (event.kind === "task-created") {}')
    assert keys_the_registry_lacks('if ("costs" in payload) show(payload.requirement, payload["cost"]);') == {
        "costs", "requirement"}
