"""The web client's list of event kinds and payload keys, rendered from the registry, and the pipeline's stages
by phase (so the timeline can group a step's verdicts under the phases' names).

``codeflux/server/static/event_kinds.js`` is this module's output, committed (the web client has no build
step): ``cmd/codeflux-dev generate`` writes it and ``generate-check`` fails when it differs from what the
registry (:mod:`codeflux.domain.events`) renders. The web client names kinds only through it, and a test
fails when a static module names a kind or payload key the registry lacks.

Run as ``python -m codeflux.server.event_kinds`` to print the module.
"""

from __future__ import annotations

import json
import sys
from typing import Final

from codeflux.domain.events import EventKind, event_payload_keys
from codeflux.domain.pipeline.stages import STAGES

__all__ = ["WEB_CLIENT_MODULE", "render_event_kinds_module"]

WEB_CLIENT_MODULE: Final = "event_kinds.js"

_HEADER: Final = """\
// Generated from codeflux/domain/events.py by `cmd/codeflux-dev generate`; do not edit.
// `generate-check` fails when this file differs from what the registry renders.

"""


def render_event_kinds_module() -> str:
    """The JavaScript module: ``EventKind`` (constant name → kind), ``EVENT_KEYS`` (kind → its keys) and
    ``STAGE_PHASES`` (stage name → [its number, its phase's letter and name], in stage order)."""
    kinds = "".join(f"  {kind.name}: {json.dumps(kind.value)},\n" for kind in EventKind)
    keys = "".join(
        f"  {json.dumps(kind.value)}: Object.freeze({json.dumps(list(event_payload_keys(kind)))}),\n"
        for kind in EventKind
    )
    phases = "".join(
        f"  {json.dumps(stage.name.value)}: "
        f"Object.freeze({json.dumps([stage.number, stage.phase.value, stage.phase.label])}),\n"
        for stage in STAGES
    )
    return (
        f"{_HEADER}"
        f"// Every kind of event the journal holds.\n"
        f"export const EventKind = Object.freeze({{\n{kinds}}});\n\n"
        f"// Every key a kind's payload may carry (some only in some events, or only in newer ones).\n"
        f"export const EVENT_KEYS = Object.freeze({{\n{keys}}});\n\n"
        f"// Every stage of the pipeline: its number and its phase (letter, name), in stage order.\n"
        f"export const STAGE_PHASES = Object.freeze({{\n{phases}}});\n"
    )


if __name__ == "__main__":
    sys.stdout.write(render_event_kinds_module())
