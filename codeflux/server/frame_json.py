"""Proto3 JSON for the replies the browser gets in bulk, built at C speed instead of field by field.

``json_format.MessageToJson`` walks a message in Python, one field and one list entry at a time: for a session
stream batch of a few thousand events that is most of a replay's cost on the ``codeflux.v1+json`` subprotocol
(issue 20 item 5). A batch's columns are lists of strings and numbers, so :func:`reply_json` maps them to their
proto3 JSON form with whole-list operations and ``json.dumps`` does the rest. The text says exactly what
``json_format`` would (``tests/unit/server/test_frame_json.py`` compares the parsed forms); any other reply, and
any other body of a session frame, returns None and keeps the generic path.
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import product_pb2

__all__ = ["reply_json"]

_KIND_NAMES: Final = {number: name for name, number in product_pb2.EventKind.items()}


def _batch(batch: product_pb2.SessionEventBatch) -> dict[str, object]:
    """The proto3 JSON object of a batch: int64 as decimal strings, enums by name, empty fields left out."""
    body: dict[str, object] = {}
    if batch.session_id:
        body["sessionId"] = batch.session_id
    if batch.first_sequence:
        body["firstSequence"] = str(batch.first_sequence)
    columns: tuple[tuple[str, list[object]], ...] = (
        ("kinds", list(batch.kinds)),
        ("createdAtUs", list(map(str, batch.created_at_us))),
        ("payloadsJson", list(batch.payloads_json)),
        # An enum number this codeflux has no name for is written as its number, as json_format does.
        ("eventKinds", [_KIND_NAMES.get(number, number) for number in batch.event_kinds]),
    )
    for name, values in columns:
        if values:
            body[name] = values
    return body


def reply_json(reply: Message) -> dict[str, object] | None:
    """The proto3 JSON object of ``reply`` (without ``@type``) when it has a fast form, else None."""
    if isinstance(reply, product_pb2.SessionFrame) and reply.WhichOneof("body") == "batch":
        return {"batch": _batch(reply.batch)}
    return None
