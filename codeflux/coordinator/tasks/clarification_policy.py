"""The clarification policy (stage 2): ``ask`` (default) or ``assume``.

Stored as the setting ``clarification.policy`` (``{"policy": "ask"}``); each change commits with a
``clarification-policy-set`` event on the system session in one transaction. The planner reads it when it
records a plan revision and writes it into the revision (``Plan.clarity.policy``): under ``ask`` the
revision's questions are open and its approval is refused until each is answered; under ``assume`` each
question's stated reading is an assumption of the revision and approval is allowed. The policy in force
when the revision was drafted is the one it carries, so changing the policy never changes a plan a person
already read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from codeflux.domain.clarification import ClarificationPolicy
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.events import ClarificationPolicySet
from codeflux.store.database import Database, Transaction
from codeflux.store.events import SYSTEM_SESSION_ID, append_event
from codeflux.store.settings import put_setting, read_setting

__all__ = ["ClarificationSetting", "read_clarification_policy", "set_clarification_policy"]

_KEY: Final = "clarification.policy"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClarificationSetting:
    policy: ClarificationPolicy
    revision: int | None  # None: never set (the default, ask)


def read_clarification_policy(db: Database) -> ClarificationSetting:
    row = db.read(lambda view: read_setting(view, _KEY))
    if row is None:
        return ClarificationSetting(policy=ClarificationPolicy.ASK, revision=None)
    value = dict(row.value).get("policy")
    if value not in {member.value for member in ClarificationPolicy}:
        raise InvalidValueError(kind="stored clarification policy", reason="it is not ask or assume")
    return ClarificationSetting(policy=ClarificationPolicy(str(value)), revision=row.revision)


def set_clarification_policy(db: Database, policy: ClarificationPolicy, *,
                             expected_revision: int | None) -> ClarificationSetting:
    """Set the policy; ``expected_revision`` is the revision read (None: never set)."""
    chosen = ClarificationPolicy(policy)

    def work(tx: Transaction) -> int:
        revision = put_setting(tx, _KEY, {"policy": chosen.value}, expected_revision=expected_revision)
        append_event(tx, session_id=SYSTEM_SESSION_ID, event=ClarificationPolicySet(policy=chosen.value,
                                                                                    revision=revision))
        return revision

    return ClarificationSetting(policy=chosen, revision=db.write(work))
