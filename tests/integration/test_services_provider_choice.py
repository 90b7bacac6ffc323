"""Provider setup through SettingsService with ``codeflux start``'s real model access: the precedence (flag >
the choice stored in Settings > the built-in scripted default), the demo, refusals, and a key stored from the
browser's RPC that lands in the real Secret Service and nowhere else (no provider is contacted)."""

from __future__ import annotations

import argparse
from pathlib import Path

import keyring.backend
import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli import start
from codeflux.coordinator.spending.model_access import gateway_for_task
from codeflux.coordinator.spending.provider_choice import (
    ChoiceSource,
    PinnedChoice,
    ProviderChoice,
    provider_used_by_task,
    read_task_pin,
)
from codeflux.credentials import load_provider_key
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ids import TaskId
from codeflux.domain.providers import ProviderName
from codeflux.services import settings
from codeflux.services.app import SCRIPTED_DEMO_LABEL, CoordinatorApp
from codeflux.services.registry import Code
from codeflux.services.views import PIN_REASONS
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from tests.fixtures.provider_servers import a_test_key
from tests.fixtures.service_runs import Coordinator, drive_to_ready, failure, settle
from tests.fixtures.service_runs import call as service_call
from tests.fixtures.service_runs import control as service_control
from tests.fixtures.services import call, control, refusal, service_app

_GET = "/codeflux.v1.SettingsService/GetSettings"
_CHOOSE = "/codeflux.v1.SettingsService/SetProviderChoice"
_STORE = "/codeflux.v1.SettingsService/StoreProviderKey"


def _start_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    start.configure(parser)
    return parser.parse_args(list(argv))


def _app(db: Database, location: DataLocation, *argv: str) -> CoordinatorApp:
    return service_app(db, location, settings.methods, models=start.CliModelAccess(db, _start_args(*argv)))


def _settings(app: CoordinatorApp) -> pb.SettingsView:
    view = call(app, _GET, pb.GetSettingsRequest())
    assert isinstance(view, pb.SettingsView)
    return view


def test_without_a_flag_the_choice_stored_in_settings_wins_over_the_scripted_default(
        db: Database, data_location: DataLocation) -> None:
    app = _app(db, data_location)
    before = _settings(app)
    assert (before.provider_source, before.provider_label, before.chosen_provider) == (
        "default", SCRIPTED_DEMO_LABEL, "")
    assert "built-in default" in before.provider_reason and app.models.scripted
    assert list(before.choosable_providers) == ["scripted", "anthropic", "openai", "openai-compatible"]
    assert {row.provider for row in before.prices} >= {"anthropic", "openai"}

    chosen = call(app, _CHOOSE, pb.SetProviderChoiceRequest(control=control("p-1"), provider="anthropic",
                                                            cheap_model="claude-haiku-4-5"))

    assert isinstance(chosen, pb.SettingsView)
    assert (chosen.provider_source, chosen.chosen_provider, chosen.chosen_cheap_model) == (
        "settings", "anthropic", "claude-haiku-4-5")
    assert chosen.provider_label == "anthropic (claude-haiku-4-5)" and not app.models.scripted
    routes = app.models.gateway(("plan",))  # built from the stored choice; nothing is contacted
    assert routes is not None
    back = call(app, _CHOOSE, pb.SetProviderChoiceRequest(control=control("p-2"), provider="scripted"))
    assert isinstance(back, pb.SettingsView)
    assert (back.provider_source, back.provider_label) == ("settings", SCRIPTED_DEMO_LABEL)


def test_a_start_flag_wins_over_the_stored_choice_and_the_ui_says_so(db: Database,
                                                                   data_location: DataLocation) -> None:
    chooser = _app(db, data_location)
    call(chooser, _CHOOSE, pb.SetProviderChoiceRequest(control=control("p-1"), provider="openai",
                                                       cheap_model="gpt-5-mini"))
    flagged = _app(db, data_location, "--provider", "scripted")

    view = _settings(flagged)

    assert (view.provider_source, view.provider_label, view.chosen_provider) == ("flag", SCRIPTED_DEMO_LABEL,
                                                                                "openai")
    assert "flag" in view.provider_reason and flagged.models.scripted
    assert _settings(chooser).provider_source == "settings"  # positive control: the same store, no flag


def test_the_demo_uses_the_scripted_provider_until_a_new_choice_is_saved(db: Database,
                                                                          data_location: DataLocation) -> None:
    app = _app(db, data_location)
    call(app, _CHOOSE, pb.SetProviderChoiceRequest(control=control("p-1"), provider="openai", cheap_model="gpt-5"))
    app.models.use_scripted_demo()
    assert (_settings(app).provider_source, app.models.label) == ("demo", SCRIPTED_DEMO_LABEL)

    call(app, _CHOOSE, pb.SetProviderChoiceRequest(control=control("p-2"), provider="openai", cheap_model="gpt-5"))

    assert (_settings(app).provider_source, app.models.label) == ("settings", "openai (gpt-5)")


@pytest.mark.parametrize(("provider", "model"), [("anthropic", ""), ("nobody", "m"), ("scripted", "m"),
                                                 ("openai", "bad model name")])
def test_a_choice_that_cannot_run_is_refused_and_nothing_is_stored(db: Database, data_location: DataLocation,
                                                                   provider: str, model: str) -> None:
    app = _app(db, data_location)
    code, _ = refusal(app, _CHOOSE, pb.SetProviderChoiceRequest(control=control("p-1"), provider=provider,
                                                                cheap_model=model))
    assert code == Code.INVALID_ARGUMENT
    assert _settings(app).chosen_provider == ""


def test_a_stale_choice_is_refused(db: Database, data_location: DataLocation) -> None:
    app = _app(db, data_location)
    call(app, _CHOOSE, pb.SetProviderChoiceRequest(control=control("p-1"), provider="scripted"))
    code, _ = refusal(app, _CHOOSE, pb.SetProviderChoiceRequest(control=control("p-2", revision=9),
                                                                provider="scripted"))
    assert code == Code.ABORTED


def _every_byte_under(root: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file())


@pytest.mark.keyring
@pytest.mark.security
def test_a_key_stored_from_the_browser_rpc_is_in_the_credential_store_only(
        db: Database, data_location: DataLocation, secret_service: keyring.backend.KeyringBackend) -> None:
    app = _app(db, data_location)
    key = a_test_key()
    request = pb.StoreProviderKeyRequest(control=control("k-1"), provider="anthropic", key=key)

    reply = call(app, _STORE, request)

    assert isinstance(reply, pb.StoreProviderKeyReply)
    assert (reply.provider, reply.outcome) == ("anthropic", "stored")
    assert load_provider_key(ProviderName.ANTHROPIC).reveal() == key  # positive control: it was stored
    assert request.key == ""  # cleared from the request once wrapped
    view = _settings(app)
    anthropic = next(p for p in view.providers if p.name == "anthropic")
    assert anthropic.credential_stored and anthropic.reference_recorded
    again = call(app, _STORE, pb.StoreProviderKeyRequest(control=control("k-2"), provider="anthropic", key=key))
    assert isinstance(again, pb.StoreProviderKeyReply) and again.outcome == "updated"
    db.checkpoint_wal()
    for shown in (reply.SerializeToString(), view.SerializeToString(), _every_byte_under(data_location.directory)):
        assert key.encode() not in shown
    events = db.read(lambda v: [str(r[0]) for r in v.query_all("SELECT payload_json FROM events")])
    assert events and not any(key in payload for payload in events)
    code, message = refusal(app, _STORE, pb.StoreProviderKeyRequest(control=control("k-3"), provider="anthropic",
                                                                    key=key + " x"))
    assert code == Code.INVALID_ARGUMENT and key not in message


@pytest.mark.slow
def test_a_task_shows_the_provider_its_model_calls_went_to_not_one_chosen_since(coordinator: Coordinator) -> None:
    """The demo task's plan was drafted by the scripted provider; choosing anthropic afterwards changes what a new
    task will use (positive control) but not what the drafted task shows."""
    c = coordinator
    ready = drive_to_ready(c)
    assert ready.provider_label == SCRIPTED_DEMO_LABEL
    c.app.models = start.CliModelAccess(c.app.db, _start_args())
    chosen = service_call(c, "SettingsService/SetProviderChoice", pb.SetProviderChoiceRequest(
        control=service_control(), provider="anthropic", cheap_model="claude-sonnet-4-5"))
    assert isinstance(chosen, pb.SettingsView) and chosen.provider_label == "anthropic (claude-sonnet-4-5)"

    drafted = service_call(c, "TaskService/GetTask", pb.GetTaskRequest(task_id=ready.task_id))
    fresh = service_call(c, "TaskService/CreateTask", pb.CreateTaskRequest(
        control=service_control(), repository_path=str(c.repo), requirement="Another outcome."))

    assert isinstance(drafted, pb.TaskView) and drafted.provider_label == SCRIPTED_DEMO_LABEL
    assert isinstance(fresh, pb.TaskView) and fresh.provider_label == "anthropic (claude-sonnet-4-5)"


def test_the_config_file_ranks_below_the_settings_choice_and_above_the_default(
        db: Database, data_location: DataLocation, tmp_path: Path) -> None:
    """flag > the choice stored in Settings > the config file's [provider] > the built-in scripted default."""
    config = tmp_path / "xdg" / "codeflux" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[provider]\nname = "anthropic"\ncheap_model = "claude-haiku-4-5"\n')
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}
    app = service_app(db, data_location, settings.methods,
                      models=start.CliModelAccess(db, _start_args(), environ))
    by_config = _settings(app)
    assert (by_config.provider_source, by_config.provider_label) == ("config", "anthropic (claude-haiku-4-5)")
    assert "config file" in by_config.provider_reason
    call(app, _CHOOSE, pb.SetProviderChoiceRequest(control=control("c-1"), provider="openai", cheap_model="gpt-5-mini"))
    assert _settings(app).provider_source == "settings"  # the choice stored in Settings wins over the file
    flagged = start.CliModelAccess(db, _start_args("--provider", "scripted"), environ)
    assert flagged.source == "flag" and flagged.scripted  # and a flag over both
    unconfigured = start.CliModelAccess(db, _start_args(), {"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert unconfigured.source == "settings"  # the control: without the file, the same stored choice
    config.write_text('[provider]\nname = "anthropic"\n')  # no model: refused when start begins, naming the file
    with pytest.raises(InvalidValueError, match=r"config file .*config\.toml, setting \[provider\] cheap_model"):
        start.CliModelAccess(db, _start_args(), environ)


def test_run_without_a_flag_uses_the_config_files_provider_and_a_model_flag_still_wins(tmp_path: Path) -> None:
    from codeflux.cli.run import with_configured_provider

    args = argparse.Namespace(provider=None, cheap_model="claude-sonnet-4-5", capable_model=None, base_url=None)
    assert with_configured_provider(args, {"XDG_CONFIG_HOME": str(tmp_path)}).provider == "scripted"
    (tmp_path / "codeflux").mkdir()
    config = '[provider]\nname = "anthropic"\ncheap_model = "claude-haiku-4-5"\n'
    (tmp_path / "codeflux" / "config.toml").write_text(config)
    chosen = with_configured_provider(args, {"XDG_CONFIG_HOME": str(tmp_path)})
    assert (chosen.provider, chosen.cheap_model) == ("anthropic", "claude-sonnet-4-5")


# ─── a task pins the provider it was created with (issue 20 item 6) ───────────────────────────────────────────


def _task(c: Coordinator, task_id: str) -> pb.TaskView:
    view = service_call(c, "TaskService/GetTask", pb.GetTaskRequest(task_id=task_id))
    assert isinstance(view, pb.TaskView)
    return view


def _create(c: Coordinator, requirement: str = "Another outcome.") -> pb.TaskView:
    view = service_call(c, "TaskService/CreateTask", pb.CreateTaskRequest(
        control=service_control(), repository_path=str(c.repo), requirement=requirement))
    assert isinstance(view, pb.TaskView)
    return view


def _choose(c: Coordinator, provider: str, model: str = "", **endpoint: object) -> pb.SettingsView:
    chosen = service_call(c, "SettingsService/SetProviderChoice", pb.SetProviderChoiceRequest(
        control=service_control(), provider=provider, cheap_model=model, **endpoint))
    assert isinstance(chosen, pb.SettingsView)
    return chosen


@pytest.mark.slow
def test_a_choice_changed_between_plan_and_run_leaves_the_run_on_the_provider_the_task_pinned(
        coordinator: Coordinator) -> None:
    """The task is created with nothing chosen (the scripted default), planned, then anthropic is chosen: its run
    still goes to the scripted provider (it reaches the demo's first command), while a task created after the choice
    pins anthropic. Without the pin the run would use anthropic, which has no key here."""
    c = coordinator
    c.app.models = start.CliModelAccess(c.app.db, _start_args())
    ready = drive_to_ready(c)
    assert read_task_pin(c.app.db, TaskId.parse(ready.task_id)) == PinnedChoice(
        choice=ProviderChoice(provider="scripted"), source=ChoiceSource.DEFAULT)

    chosen = _choose(c, "anthropic", "claude-sonnet-4-5")
    assert chosen.provider_label == "anthropic (claude-sonnet-4-5)" and not c.app.models.scripted
    fresh = _create(c)
    assert fresh.provider_label == "anthropic (claude-sonnet-4-5)"  # positive control: new tasks get the new choice
    assert read_task_pin(c.app.db, TaskId.parse(fresh.task_id)) == PinnedChoice(
        choice=ProviderChoice(provider="anthropic", cheap_model="claude-sonnet-4-5", capable_model="claude-sonnet-4-5"),
        source=ChoiceSource.SETTINGS)  # resolved: the capable model defaults to the cheap one

    service_call(c, "TaskService/StartTask", pb.StartTaskRequest(control=service_control(), task_id=ready.task_id,
                                                                 plan_revision=ready.plan.revision))
    ran = settle(c, ready.task_id)

    assert ran.state == "awaiting-authority" and len(ran.pending_approvals) == 1  # the demo's run, by its script
    assert provider_used_by_task(c.app.db, TaskId.parse(ready.task_id)) == ("scripted", "scripted-cheap")
    assert ran.provider_label == SCRIPTED_DEMO_LABEL
    assert _task(c, fresh.task_id).provider_label == "anthropic (claude-sonnet-4-5)"


def test_a_start_flag_wins_for_tasks_created_under_it_only(coordinator: Coordinator) -> None:
    c = coordinator
    c.app.models = start.CliModelAccess(c.app.db, _start_args())
    _choose(c, "openai", "gpt-5-mini")
    before = _create(c, "Created before the flag.")
    c.app.models = start.CliModelAccess(c.app.db, _start_args("--provider", "scripted"))  # `start` again, a flag
    under_flag = _create(c, "Created under the flag.")

    assert _task(c, before.task_id).provider_label == "openai (gpt-5-mini)"
    assert under_flag.provider_label == SCRIPTED_DEMO_LABEL
    # why each pin was in force, as the task view says it (the browser shows it next to the label); every source
    # has its words (a task view never fails on a pin)
    assert set(PIN_REASONS) == set(ChoiceSource)
    assert [(v.provider_source, v.provider_reason) for v in (_task(c, before.task_id), under_flag)] == [
        ("settings", "the choice stored in Settings → Providers"),
        ("flag", "the --provider flag `codeflux start` was given")]
    assert read_task_pin(c.app.db, TaskId.parse(under_flag.task_id)) == PinnedChoice(
        choice=ProviderChoice(provider="scripted"), source=ChoiceSource.FLAG)
    kept = gateway_for_task(c.app.models, c.app.db, TaskId.parse(before.task_id), ("plan",))
    flagged = gateway_for_task(c.app.models, c.app.db, TaskId.parse(under_flag.task_id), ("plan",))
    assert (kept.scripted, kept.pin is not None, flagged.scripted) == (False, True, True)


def test_a_task_without_a_pin_keeps_using_the_choice_in_force(coordinator: Coordinator) -> None:
    """A task created by a model access that pins nothing (as a task created before migration 000018 has no pin)
    follows the choice in force at each draft or run, as before."""
    c = coordinator
    old = _create(c, "Created without a pin.")  # the fixture's access (scripted demo) pins nothing
    assert read_task_pin(c.app.db, TaskId.parse(old.task_id)) is None
    c.app.models = start.CliModelAccess(c.app.db, _start_args())
    _choose(c, "anthropic", "claude-haiku-4-5")

    follows = gateway_for_task(c.app.models, c.app.db, TaskId.parse(old.task_id), ("plan",))

    assert (follows.pin, follows.scripted) == (None, False)
    assert _task(c, old.task_id).provider_label == "anthropic (claude-haiku-4-5)"


def test_an_openai_compatible_choice_keeps_its_base_url_and_no_key_setting_and_its_endpoint_still_needs_approval(
        coordinator: Coordinator) -> None:
    c = coordinator
    c.app.models = start.CliModelAccess(c.app.db, _start_args())
    chosen = _choose(c, "openai-compatible", "local-model", base_url="HTTP://127.0.0.1:4000/v1/", no_key=True)
    assert (chosen.chosen_provider, chosen.chosen_base_url, chosen.chosen_no_key, chosen.provider_source) == (
        "openai-compatible", "http://127.0.0.1:4000/v1", True, "settings")
    task = _create(c)
    assert task.provider_label == "openai-compatible (local-model) at http://127.0.0.1:4000/v1"
    service_call(c, "TaskService/SetBudget", pb.SetBudgetRequest(control=service_control(), task_id=task.task_id,
                                                                 choice="set", hard_limit="1.00", currency="USD"))
    _choose(c, "scripted")  # chosen since: the task keeps its endpoint

    refused = failure(c, "TaskService/DraftPlan", pb.DraftPlanRequest(control=service_control(), task_id=task.task_id))

    assert "http://127.0.0.1:4000/v1" in refused.safe_message and "not been approved" in refused.safe_message
    assert read_task_pin(c.app.db, TaskId.parse(task.task_id)) == PinnedChoice(choice=ProviderChoice(
        provider="openai-compatible", cheap_model="local-model", capable_model="local-model",
        base_url="http://127.0.0.1:4000/v1", uses_key=False),
        source=ChoiceSource.SETTINGS)
    assert _create(c, "After.").provider_label == SCRIPTED_DEMO_LABEL  # control: the new choice for new tasks


def test_a_task_created_under_a_start_base_url_flag_keeps_that_endpoint_for_anthropic_too(
        coordinator: Coordinator) -> None:
    """`codeflux start --provider anthropic --base-url <proxy>`: the task pinned anthropic and its models but not
    the endpoint (the pins kept a base URL for openai-compatible only), so its drafts and runs went to the provider's
    default endpoint — not the proxy codeflux was started with — and the task showed no endpoint card."""
    c = coordinator
    flags = ("--provider", "anthropic", "--cheap-model", "claude-haiku-4-5", "--base-url", _PROXY + "/")
    c.app.models = start.CliModelAccess(c.app.db, _start_args(*flags))
    task = _create(c)
    pin = read_task_pin(c.app.db, TaskId.parse(task.task_id))
    assert pin is not None and (pin.choice.provider, pin.choice.base_url, pin.source) == (
        "anthropic", _PROXY, ChoiceSource.FLAG)
    assert task.provider_label == f"anthropic (claude-haiku-4-5) at {_PROXY}"
    assert _card(task.endpoint_approval) == ("anthropic", _PROXY)
    c.app.models = start.CliModelAccess(c.app.db, _start_args())  # `start` again without the flag
    service_call(c, "TaskService/SetBudget", pb.SetBudgetRequest(control=service_control(), task_id=task.task_id,
                                                                 choice="set", hard_limit="1.00", currency="USD"))

    refused = failure(c, "TaskService/DraftPlan", pb.DraftPlanRequest(control=service_control(), task_id=task.task_id))

    # the task's draft goes to the proxy it was created under (refused until that endpoint is approved)
    assert _PROXY in refused.safe_message and "not been approved" in refused.safe_message
    assert _card(_task(c, task.task_id).endpoint_approval) == ("anthropic", _PROXY)
    c.app.models = start.CliModelAccess(c.app.db, _start_args(*flags[:4], "--base-url", "https://api.anthropic.com"))
    default = _create(c, "Created at the default endpoint.")  # control: the provider's own endpoint pins ''
    kept = read_task_pin(c.app.db, TaskId.parse(default.task_id))
    assert kept is not None and kept.choice.base_url == "" and not default.HasField("endpoint_approval")
    assert default.provider_label == "anthropic (claude-haiku-4-5)"


@pytest.mark.parametrize(("refused", "says"), [
    (("openai-compatible", "http://192.0.2.7:4000/v1", False), "http is allowed only for a loopback host"),
    (("openai-compatible", "ftp://127.0.0.1/v1", False), "the scheme must be https"),
    (("openai-compatible", "https://user:pw@example.com/v1", False), "a user name or password in the URL is refused"),
    (("openai-compatible", "", False), "openai-compatible needs a base URL"),
    (("anthropic", "https://example.com/v1", False), "for the openai-compatible provider only"),
    (("openai", "", True), "for the openai-compatible provider only"),
])
def test_a_base_url_or_no_key_setting_that_cannot_run_is_refused_saying_why(
        db: Database, data_location: DataLocation, refused: tuple[str, str, bool], says: str) -> None:
    app = _app(db, data_location)
    provider, base_url, no_key = refused
    code, message = refusal(app, _CHOOSE, pb.SetProviderChoiceRequest(
        control=control("p-1"), provider=provider, cheap_model="m", base_url=base_url, no_key=no_key))
    assert code == Code.INVALID_ARGUMENT and says in message
    assert "pw@" not in message  # the URL is never echoed (its userinfo may be a credential)
    assert _settings(app).chosen_provider == ""


# ─── endpoint cards beyond the stored choice's, and CODEFLUX_PROVIDER as its own source ─────────────────────────

_APPROVE = "/codeflux.v1.SettingsService/ApproveEndpoint"
_PROXY = "https://llm-proxy.example.com/v1"


def _card(card: pb.EndpointApprovalCard) -> tuple[str, str]:
    return card.provider, card.base_url


@pytest.mark.parametrize(("argv", "expected"), [
    (("--provider", "anthropic", "--cheap-model", "claude-haiku-4-5", "--base-url", _PROXY + "/"),
     ("anthropic", _PROXY)),
    (("--provider", "openai", "--cheap-model", "gpt-5-mini", "--base-url", _PROXY), ("openai", _PROXY)),
    (("--provider", "openai-compatible", "--cheap-model", "local", "--base-url", "http://127.0.0.1:4000/v1",
      "--no-key"), ("openai-compatible", "http://127.0.0.1:4000/v1")),
])
def test_settings_shows_a_card_for_a_start_base_url_flags_endpoint_until_it_is_approved(
        db: Database, data_location: DataLocation, argv: tuple[str, ...], expected: tuple[str, str]) -> None:
    """Only the stored choice's endpoint had a card in Settings: a `start --base-url` flag's endpoint (anthropic and
    openai included, whose base URL a task's pin does not carry) had none, though every call to it is refused."""
    app = _app(db, data_location, *argv)
    waiting = _settings(app)
    assert waiting.provider_source == "flag" and not waiting.HasField("chosen_endpoint_approval")
    assert _card(waiting.current_endpoint_approval) == expected

    approved = call(app, _APPROVE, pb.ApproveEndpointRequest(control=control("e-1"), provider=expected[0],
                                                             base_url=expected[1]))

    assert isinstance(approved, pb.SettingsView) and not approved.HasField("current_endpoint_approval")
    assert (expected[0], expected[1]) in {(a.provider, a.base_url) for a in approved.endpoint_approvals}
    plain = _settings(_app(db, data_location, "--provider", "anthropic", "--cheap-model", "claude-haiku-4-5"))
    assert not plain.HasField("current_endpoint_approval")  # control: the provider's default endpoint needs none


def test_the_stored_choices_endpoint_has_one_card_in_settings_not_two(db: Database,
                                                                      data_location: DataLocation) -> None:
    app = _app(db, data_location)
    chosen = call(app, _CHOOSE, pb.SetProviderChoiceRequest(control=control("p-1"), provider="openai-compatible",
                                                            cheap_model="local", base_url="http://127.0.0.1:4000/v1"))
    assert isinstance(chosen, pb.SettingsView)
    assert _card(chosen.chosen_endpoint_approval) == ("openai-compatible", "http://127.0.0.1:4000/v1")
    assert not chosen.HasField("current_endpoint_approval")
    flagged = _settings(_app(db, data_location, "--provider", "openai-compatible", "--cheap-model", "m",
                             "--base-url", "http://127.0.0.1:5000/v1"))
    assert _card(flagged.chosen_endpoint_approval) == ("openai-compatible", "http://127.0.0.1:4000/v1")
    assert _card(flagged.current_endpoint_approval) == ("openai-compatible", "http://127.0.0.1:5000/v1")


def test_a_task_without_a_pin_gets_the_card_of_the_endpoint_it_actually_uses(coordinator: Coordinator) -> None:
    """A task created before pins follows the choice in force; when that choice's endpoint was not approved its
    drafts and runs are refused, but only pinned tasks showed a card: it now gets the card of that endpoint."""
    c = coordinator
    old = _create(c, "Created without a pin.")  # the fixture's access (scripted demo) pins nothing
    assert read_task_pin(c.app.db, TaskId.parse(old.task_id)) is None
    assert not old.HasField("endpoint_approval")
    c.app.models = start.CliModelAccess(c.app.db, _start_args())
    _choose(c, "openai-compatible", "local-model", base_url="http://127.0.0.1:4000/v1", no_key=True)
    service_call(c, "TaskService/SetBudget", pb.SetBudgetRequest(control=service_control(), task_id=old.task_id,
                                                                 choice="set", hard_limit="1.00", currency="USD"))
    refused = failure(c, "TaskService/DraftPlan", pb.DraftPlanRequest(control=service_control(), task_id=old.task_id))
    assert "http://127.0.0.1:4000/v1" in refused.safe_message and "not been approved" in refused.safe_message

    shown = _task(c, old.task_id)

    assert shown.provider_basis == "current"
    assert _card(shown.endpoint_approval) == ("openai-compatible", "http://127.0.0.1:4000/v1")
    c.app.models = start.CliModelAccess(c.app.db, _start_args("--provider", "anthropic", "--cheap-model",
                                                              "claude-haiku-4-5", "--base-url", _PROXY))
    assert _card(_task(c, old.task_id).endpoint_approval) == ("anthropic", _PROXY)  # a flag's, anthropic too
    service_call(c, "SettingsService/ApproveEndpoint", pb.ApproveEndpointRequest(
        control=service_control(), provider="anthropic", base_url=_PROXY))
    assert not _task(c, old.task_id).HasField("endpoint_approval")


def test_codeflux_provider_in_starts_environment_is_its_own_source_in_settings_and_the_task_pin(
        coordinator: Coordinator, tmp_path: Path) -> None:
    """CODEFLUX_PROVIDER showed as the `start --provider` flag it stands for (the pins' CHECK had no
    'environment'); it keeps the flag's rank (above the stored choice) and is named as itself."""
    c = coordinator
    environ = {"CODEFLUX_PROVIDER": "scripted", "XDG_CONFIG_HOME": str(tmp_path / "no-config")}
    c.app.models = start.CliModelAccess(c.app.db, _start_args(), environ)
    chosen = _choose(c, "openai", "gpt-5-mini")  # stored, but the environment ranks above it

    assert (chosen.provider_source, chosen.provider_label) == ("environment", SCRIPTED_DEMO_LABEL)
    assert "CODEFLUX_PROVIDER" in chosen.provider_reason
    task = _create(c)
    assert read_task_pin(c.app.db, TaskId.parse(task.task_id)) == PinnedChoice(
        choice=ProviderChoice(provider="scripted"), source=ChoiceSource.ENVIRONMENT)
    assert (task.provider_source, task.provider_reason) == (
        "environment", "CODEFLUX_PROVIDER in the environment (it stands for the --provider flag)")
    c.app.models = start.CliModelAccess(c.app.db, _start_args("--provider", "scripted"), environ)
    assert _settings_of(c).provider_source == "flag"  # control: a flag is still named as the flag


def _settings_of(c: Coordinator) -> pb.SettingsView:
    view = service_call(c, "SettingsService/GetSettings", pb.GetSettingsRequest())
    assert isinstance(view, pb.SettingsView)
    return view
