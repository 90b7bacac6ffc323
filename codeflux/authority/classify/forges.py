"""The code-hosting CLIs: gh, glab and hub (which is git with extra subcommands).

Every call talks to the hosting service (``network``, unscoped: config decides the host); posting
actions add ``external-communication``, ``auth`` and secrets ``credential``, extension installs
``install``. Options that take a value (``-R owner/repo``) are read as options, so that their value is
never mistaken for the command group or action.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from codeflux.authority.classify.commands import Command, Handler
from codeflux.authority.classify.findings import Findings
from codeflux.authority.classify.git import GIT_PROGRAMS
from codeflux.authority.classify.options import Parsed, option_grammar, parse_options, table_words
from codeflux.domain.capabilities import Capability

_C = Capability

_GH_POSTING: Final = frozenset(
    table_words(
        "create comment edit close reopen merge review delete fork archive unarchive rename sync transfer lock "
        "unlock pin unpin ready upload set add remove enable disable cancel rerun run develop deploy "
        "approve dispatch star unstar"
    )
)
_GH_OPTIONS: Final = option_grammar(short_values="R", long_values="--repo --hostname", stop_at_operand=False)


def _hosted_git_cli(command: Command, out: Findings) -> None:
    """gh, glab, hub: the hosting service's API; posting actions are external communication."""
    parsed = parse_options(command.args, _GH_OPTIONS) or Parsed(options=(), operands=command.args)
    words = [arg for arg in parsed.operands if not arg.startswith("-")]
    out.network(f"{command.program} talks to the code-hosting service", [None])
    group = words[0] if words else ""
    action = words[1] if len(words) > 1 else ""
    if group == "auth" or group in {"secret", "variable", "ssh-key", "gpg-key"}:
        out.add(_C.CREDENTIAL, f"{command.program} {group} handles credentials or secrets")
    if group == "api" or action in _GH_POSTING or (group in {"pull-request", "release", "issue"} and action):
        out.add(_C.EXTERNAL_COMMUNICATION, f"{command.program} {group} {action} posts to the hosting service")
    if group == "extension" and action in {"install", "upgrade"}:
        out.add(_C.INSTALL, f"{command.program} extension {action} installs an extension")
    if command.program == "hub" and words:
        GIT_PROGRAMS["git"](replace(command, program="git"), out)


FORGE_PROGRAMS: Final[Mapping[str, Handler]] = dict.fromkeys(table_words("gh glab hub"), _hosted_git_cli)
"""The code-hosting CLIs, by name."""
