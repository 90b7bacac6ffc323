"""``SettingsService``: providers, approved endpoints, and the default hard budget.

* ``GetSettings`` — each provider's credential status (as ``codeflux provider list`` shows it, bounded in
  time, never a key), every endpoint a person approved (read from the ``endpoint-approved`` events of the
  system session, which :func:`codeflux.coordinator.spending.model_approvals.approve_model_endpoint` commits in
  the same transaction as the approval; the time shown is the event's commit time), the provider the
  coordinator uses, and the default hard limit new tasks are offered (absent when none is set).
* ``SetClarificationPolicy`` — ``ask`` (default: a plan revision with open questions waits for the person's
  answers) or ``assume`` (each question's stated reading becomes an assumption of the revision); applies to
  plan revisions drafted from then on (:mod:`codeflux.coordinator.tasks.clarification_policy`).
* ``SetBudgetDefaults`` — sets that default from an exact decimal (``"2.50"``, never a float) in a currency
  codeflux knows, or clears it with an empty amount. It is a suggestion the composer pre-fills; a task's
  budget is still set on the task (see :mod:`codeflux.coordinator.spending.budget_defaults`).
* ``SetProviderChoice`` — the provider (and, for a real one, the ladder's models; for ``openai-compatible`` its base
  URL, validated and normalized, and whether it takes no key) new tasks pin when ``codeflux start`` was given no
  ``--provider`` flag; stored as a setting (:mod:`codeflux.coordinator.spending.provider_choice`). Precedence: flag >
  the choice stored here > the config file > the built-in default (scripted, not an AI model). A task keeps the
  choice it was created with.
  ``GetSettings`` says which provider is used and why, every provider's models and rates and its key status.
* ``ApproveEndpoint`` — a person approves one non-default endpoint of one provider (normalized; refused URLs are
  never recorded) through :func:`codeflux.coordinator.spending.model_approvals.approve_model_endpoint`, the call
  ``codeflux provider approve-endpoint`` makes; a task paused on that endpoint can then be resumed. Over the browser
  connection it answers an ``EndpointApprovalCard`` (``TaskView.endpoint_approval``,
  ``SettingsView.chosen_endpoint_approval``) and must send back that card's confirmation
  (:mod:`codeflux.server.confirmations`): another endpoint's, a forged or a used one is refused.
* ``StoreProviderKey`` — a provider's key, sent once, written to the OS credential store through
  :func:`codeflux.credentials.store_provider_key` (registered with the redactor first); SQLite keeps only the
  reference, as ``codeflux provider set`` does. The key is cleared from the request once wrapped as a
  :class:`~codeflux.credentials.Secret`; the reply says only "stored" or "updated".
"""

from __future__ import annotations

import os
from typing import Final

from google.protobuf.message import Message

from codeflux.api.v1 import common_pb2
from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.journal import read_every_system_event
from codeflux.coordinator.maintenance import record_provider_key_reference
from codeflux.coordinator.spending.budget_defaults import read_budget_default, set_budget_default
from codeflux.coordinator.spending.model_access import ExplainedModelAccess
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.coordinator.spending.provider_choice import (
    SCRIPTED_PROVIDER,
    ChoiceSource,
    ProviderChoice,
    read_provider_choice,
    set_provider_choice,
)
from codeflux.coordinator.tasks.clarification_policy import read_clarification_policy, set_clarification_policy
from codeflux.coordinator.user_config import resolve_defaults
from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.clarification import ClarificationPolicy
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.events import EndpointApproved
from codeflux.domain.money import Currency, Money
from codeflux.domain.providers import ProviderName
from codeflux.services.app import CoordinatorApp
from codeflux.services.mutations import mutation_of
from codeflux.services.prices import price_list
from codeflux.services.registry import CallContext, StreamMethod, UnaryMethod, method_name
from codeflux.services.views import current_endpoint_card, endpoint_approval_card, money
from codeflux.services.views import rfc3339_of_us as _iso
from codeflux.services.workspace import provider_statuses
from codeflux.store.database import Database

__all__ = ["endpoint_approvals", "methods", "settings_view"]

_SERVICE: Final = "SettingsService"


def endpoint_approvals(db: Database) -> list[pb.EndpointApprovalView]:
    """Every approved (provider, base URL), oldest first, from the system session's journal."""
    approvals: dict[tuple[str, str], pb.EndpointApprovalView] = {}
    for event in read_every_system_event(db):
        approved = event.event
        if isinstance(approved, EndpointApproved):
            approvals.setdefault((approved.provider, approved.base_url), pb.EndpointApprovalView(
                provider=approved.provider, base_url=approved.base_url, approved_at=_iso(event.created_at_us)))
    return list(approvals.values())


_REASONS: Final = {
    ChoiceSource.FLAG: "the --provider flag `codeflux start` was given (a flag wins over the choice stored here)",
    ChoiceSource.ENVIRONMENT: "CODEFLUX_PROVIDER in the environment `codeflux start` was given (it stands for the "
                              "--provider flag, so it wins over the choice stored here)",
    ChoiceSource.DEMO: "the demo (scripted provider); saving a choice here applies it to work started afterwards",
    ChoiceSource.SETTINGS: "the choice stored here (Settings → Providers)",
    ChoiceSource.CONFIG: "the config file's [provider] (nothing is chosen here and `codeflux start` got no --provider "
                         "flag; `codeflux doctor` shows the file's path)",
    ChoiceSource.DEFAULT: "the built-in default: nothing is chosen here and `codeflux start` got no --provider flag",
}


def provider_source(app: CoordinatorApp) -> ChoiceSource:
    """Why the coordinator uses its provider; a model access that cannot say was fixed when it started."""
    models = app.models
    return ChoiceSource(models.source) if isinstance(models, ExplainedModelAccess) else ChoiceSource.FLAG


def settings_view(app: CoordinatorApp) -> pb.SettingsView:
    """What the settings screen shows (see the module docstring)."""
    default = read_budget_default(app.db).hard_limit
    source = provider_source(app)
    stored = read_provider_choice(app.db)
    view = pb.SettingsView(providers=provider_statuses(app.db), endpoint_approvals=endpoint_approvals(app.db),
                           provider_label=app.models.label,
                           clarification_policy=read_clarification_policy(app.db).policy.value,
                           provider_source=source.value, provider_reason=_REASONS[source],
                           provider_choice_revision=stored.revision or 0,
                           prices=price_list(PriceCatalog(app.db).list_prices()).prices,
                           choosable_providers=[SCRIPTED_PROVIDER, *(p.value for p in ProviderName)])
    if stored.choice is not None:
        view.chosen_provider = stored.choice.provider
        view.chosen_cheap_model = stored.choice.cheap_model
        view.chosen_capable_model = stored.choice.capable_model
        view.chosen_base_url = stored.choice.base_url
        view.chosen_no_key = not stored.choice.uses_key
        card = endpoint_approval_card(app.db, stored.choice)
        if card is not None:
            view.chosen_endpoint_approval.CopyFrom(card)
    current = current_endpoint_card(app)  # a start flag's (or the environment's, the file's): its own card
    if current is not None and (current.provider, current.base_url) != (view.chosen_endpoint_approval.provider,
                                                                        view.chosen_endpoint_approval.base_url):
        view.current_endpoint_approval.CopyFrom(current)
    if default is not None:
        view.default_hard_limit.CopyFrom(money(default))
        view.default_hard_limit_source = "settings"
    else:  # saved here ranks above the environment and the config file, as the provider choice does
        try:
            effective = resolve_defaults({}, os.environ)
        except InvalidValueError:  # a file or variable made invalid while start runs: doctor names it
            return view
        if effective.budget_source != "built-in":
            view.default_hard_limit.CopyFrom(money(effective.budget))
            view.default_hard_limit_source = effective.budget_source
    return view


def _expected_revision(control: common_pb2.MutationControl, current: int | None) -> int | None:
    """The revision a setting change is made against: the caller's, else the one stored now (None: never set)."""
    return control.expected_revision if control.expected_revision else current


def methods(app: CoordinatorApp) -> list[UnaryMethod[Message, Message] | StreamMethod[Message, Message]]:
    def get_settings(ctx: CallContext, request: pb.GetSettingsRequest) -> pb.SettingsView:
        return settings_view(app)

    def set_budget_defaults(ctx: CallContext, request: pb.SetBudgetDefaultsRequest) -> pb.SettingsView:
        mutation_of(ctx, "SetBudgetDefaults", request.control)
        limit = None
        if request.hard_limit.strip():
            currency = Currency.parse(request.currency or "USD")
            limit = Money.parse_decimal(request.hard_limit.strip(), currency=currency)
        current = read_budget_default(app.db)
        expected = _expected_revision(request.control, current.revision)
        set_budget_default(app.db, limit, expected_revision=expected)
        return settings_view(app)

    def set_clarification(ctx: CallContext, request: pb.SetClarificationPolicyRequest) -> pb.SettingsView:
        mutation_of(ctx, "SetClarificationPolicy", request.control)
        if request.policy not in {member.value for member in ClarificationPolicy}:
            raise InvalidValueError(kind="clarification policy", reason="must be ask or assume")
        current = read_clarification_policy(app.db)
        expected = _expected_revision(request.control, current.revision)
        set_clarification_policy(app.db, ClarificationPolicy(request.policy), expected_revision=expected)
        return settings_view(app)

    def set_choice(ctx: CallContext, request: pb.SetProviderChoiceRequest) -> pb.SettingsView:
        mutation_of(ctx, "SetProviderChoice", request.control)
        if request.base_url.strip() and request.provider.strip() != ProviderName.OPENAI_COMPATIBLE.value:
            raise InvalidValueError(kind="provider choice",
                                    reason="a base URL is stored here for the openai-compatible provider only "
                                    "(anthropic or openai through a proxy: `codeflux start --base-url`)")
        choice = ProviderChoice.normalized(provider=request.provider.strip(), cheap_model=request.cheap_model.strip(),
                                           capable_model=request.capable_model.strip(),
                                           base_url=request.base_url.strip(), uses_key=not request.no_key)
        current = read_provider_choice(app.db)
        expected = _expected_revision(request.control, current.revision)
        set_provider_choice(app.db, choice, expected_revision=expected)
        return settings_view(app)

    def store_key(ctx: CallContext, request: pb.StoreProviderKeyRequest) -> pb.StoreProviderKeyReply:
        mutation_of(ctx, "StoreProviderKey", request.control)
        provider = ProviderName.parse(request.provider)
        key = Secret(request.key)
        request.ClearField("key")
        reference = store_provider_key(provider, key)
        rotated = record_provider_key_reference(app.location, provider=provider.value, credential_ref=str(reference))
        return pb.StoreProviderKeyReply(provider=provider.value, outcome="updated" if rotated else "stored")

    def approve_endpoint(ctx: CallContext, request: pb.ApproveEndpointRequest) -> pb.SettingsView:
        mutation_of(ctx, "ApproveEndpoint", request.control)
        provider = ProviderName.parse(request.provider)
        approve_model_endpoint(app.db, provider=provider, base_url=request.base_url.strip(), approved_by="user")
        return settings_view(app)

    return [
        UnaryMethod(name=method_name(_SERVICE, "ApproveEndpoint"), request_type=pb.ApproveEndpointRequest,
                    response_type=pb.SettingsView, handler=approve_endpoint, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "SetProviderChoice"), request_type=pb.SetProviderChoiceRequest,
                    response_type=pb.SettingsView, handler=set_choice, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "StoreProviderKey"), request_type=pb.StoreProviderKeyRequest,
                    response_type=pb.StoreProviderKeyReply, handler=store_key, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "SetClarificationPolicy"),
                    request_type=pb.SetClarificationPolicyRequest, response_type=pb.SettingsView,
                    handler=set_clarification, mutating=True),
        UnaryMethod(name=method_name(_SERVICE, "GetSettings"), request_type=pb.GetSettingsRequest,
                    response_type=pb.SettingsView, handler=get_settings),
        UnaryMethod(name=method_name(_SERVICE, "SetBudgetDefaults"), request_type=pb.SetBudgetDefaultsRequest,
                    response_type=pb.SettingsView, handler=set_budget_defaults, mutating=True),
    ]
