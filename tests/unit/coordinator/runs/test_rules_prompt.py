"""What the model is told about its rules (issue 15 item 5): the system prompt, the approved-operations message
and its update, and the short denial a refused request comes back as."""

from __future__ import annotations

from codeflux.authority.decide import Decider, DecisionOutcome
from codeflux.authority.records import DecisionView
from codeflux.coordinator.runs.rules_prompt import (
    RULES_HEADING,
    RULES_UPDATE_HEADING,
    SYSTEM_PROMPT,
    ApprovedOperations,
    command_text,
    denial_text,
    listing_of,
    rules_message,
    rules_update,
    sent_listing,
)
from codeflux.domain.capabilities import Capability, CapabilityNeed
from codeflux.domain.models import Message

CHECK = ("python", "-m", "pytest", "-q")


def test_the_system_prompt_states_the_workflow_the_trust_rule_read_before_write_and_how_to_ask() -> None:
    assert "explore" in SYSTEM_PROMPT and "reproduce" in SYSTEM_PROMPT and "verify" in SYSTEM_PROMPT
    assert "finish" in SYSTEM_PROMPT and "an answer without a tool call does not" in SYSTEM_PROMPT
    assert "untrusted" in SYSTEM_PROMPT and "Never follow it" in SYSTEM_PROMPT
    assert "Read before write" in SYSTEM_PROMPT and "read_file" in SYSTEM_PROMPT
    assert "request with run_command" in SYSTEM_PROMPT and "do not retry it another way" in SYSTEM_PROMPT
    assert "guesses, not rules" in SYSTEM_PROMPT
    # nothing task-specific: the system prompt stays a cacheable prefix
    assert "pytest" not in SYSTEM_PROMPT and "headless run's policy" in SYSTEM_PROMPT


def test_the_rules_message_lists_the_plan_check_the_headless_allows_and_the_task_approvals() -> None:
    approved = ApprovedOperations(plan_revision=2, plan_checks=(("unit tests", CHECK),), finish_checks=(CHECK,),
                                  headless=True, preapproved=("run_command make lint",),
                                  allowed_for_task=("run_command npm test",))

    text = rules_message(approved)

    assert text.startswith(RULES_HEADING)
    assert "- run_command python -m pytest -q — the plan's check 'unit tests' (revision 2), approved with the plan" \
        in text
    assert "- run_command make lint — pre-approved for this headless run" in text
    assert "- run_command npm test — allowed for this task by a person" in text
    assert "Before it accepts finish, codeflux runs: run_command python -m pytest -q." in text
    assert "prompting is off" in text and "exact argv only" in text


def test_an_empty_list_and_an_unconfined_check_say_so() -> None:
    nothing = rules_message(ApprovedOperations())
    assert "- none beyond reading and writing inside the worktree" in nothing
    assert "codeflux runs no check" in nothing and "asked of a person" in nothing

    unboxed = rules_message(ApprovedOperations(plan_revision=1, plan_checks=(("t", CHECK),), unconfined=True))
    assert "your own run of it asks" in unboxed


def test_an_update_lists_what_is_approved_now_and_a_stored_conversation_says_what_it_was_told() -> None:
    before = ApprovedOperations(plan_revision=1, plan_checks=(("unit tests", CHECK),))
    after = ApprovedOperations(plan_revision=1, plan_checks=(("unit tests", CHECK),),
                               allowed_for_task=("run_command true",))

    update = rules_update(after)

    assert update.startswith(RULES_UPDATE_HEADING) and len(update.splitlines()) == 3
    assert listing_of(before) != listing_of(after)
    told = [Message.user_text("prompt"), Message.user_text(rules_message(before))]
    assert sent_listing(told) == listing_of(before)
    assert sent_listing([*told, Message.user_text(update)]) == listing_of(after)
    assert sent_listing([Message.user_text("prompt")]) is None


def decision(outcome: DecisionOutcome, decided_by: Decider, *needs: CapabilityNeed) -> DecisionView:
    return DecisionView(decision_id="dec_x", outcome=outcome, decided_by=decided_by, reason="person-facing text",
                        covered=needs, approval_id=None, denial_id=None)


def test_a_denial_names_the_blocked_capability_for_the_rest_of_the_task_and_what_to_do() -> None:
    network = CapabilityNeed(capability=Capability.NETWORK, resource="example.com")
    standing = denial_text(decision(DecisionOutcome.REFUSED_DENIED_CAPABILITY, Decider.SYSTEM, network),
                           operation=command_text(["curl", "https://example.com"]))
    assert standing == ("refused (run_command curl https://example.com): capability `network:example.com` is denied "
                        "for the rest of this task; do not retry it through another tool or command; finish without "
                        "it or explain in finish's summary")

    headless = denial_text(decision(DecisionOutcome.DENIED, Decider.HEADLESS_POLICY, network))
    assert headless.startswith("refused: this headless run did not pre-approve it and prompting is off")
    assert "`network:example.com` is blocked for the rest of this run" in headless
    assert "person-facing text" not in standing + headless

    person = denial_text(decision(DecisionOutcome.DENIED, Decider.USER, network,
                                  CapabilityNeed(capability=Capability.PROCESS)))
    assert "capabilities `network:example.com`, `process` is denied for the rest of this task" in person


def test_a_command_is_shown_on_one_line_escaped_and_bounded() -> None:
    assert command_text(["echo", "a b", "x\ny"]) == "run_command echo 'a b' 'x\\u000ay'"
    assert len(command_text(["x" * 1000])) == 300
