"""SettingsService through its method table: provider status (no Secret Service here: "unknown", never "no
key"), the endpoints a person approved (recorded through the real approval function), and the default hard
budget (exact decimals, compare-and-set, cleared by an empty amount, an event per change)."""

from __future__ import annotations

from pathlib import Path

import keyring.backend
import pytest

from codeflux.api.v1 import product_pb2 as pb
from codeflux.coordinator.journal import read_every_system_event
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.credentials import Secret, store_provider_key
from codeflux.domain.providers import ProviderName
from codeflux.services import settings
from codeflux.services.app import SCRIPTED_DEMO_LABEL, CoordinatorApp
from codeflux.services.registry import Code
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.provider_credentials import record_provider_credential_reference
from tests.fixtures.provider_servers import a_test_key
from tests.fixtures.services import call, control, refusal, service_app


@pytest.fixture
def app(db: Database, data_location: DataLocation) -> CoordinatorApp:
    return service_app(db, data_location, settings.methods)


def test_settings_show_providers_approved_endpoints_and_no_budget_default(app: CoordinatorApp,
                                                                          db: Database) -> None:
    approve_model_endpoint(db, provider=ProviderName.OPENAI_COMPATIBLE, base_url="http://127.0.0.1:8080/v1")
    approve_model_endpoint(db, provider=ProviderName.OPENAI_COMPATIBLE, base_url="http://127.0.0.1:8080/v1")

    view = call(app, "/codeflux.v1.SettingsService/GetSettings", pb.GetSettingsRequest())

    assert isinstance(view, pb.SettingsView)
    [approval] = view.endpoint_approvals
    assert (approval.provider, approval.base_url) == ("openai-compatible", "http://127.0.0.1:8080/v1")
    assert approval.approved_at.endswith("Z")
    assert len(view.providers) == len(ProviderName) and view.provider_label == SCRIPTED_DEMO_LABEL
    assert not view.HasField("default_hard_limit")


def test_the_budget_default_is_stored_exactly_shown_and_cleared(app: CoordinatorApp, db: Database) -> None:
    view = call(app, "/codeflux.v1.SettingsService/SetBudgetDefaults",
                pb.SetBudgetDefaultsRequest(control=control("d-1"), hard_limit="2.50", currency="USD"))
    assert isinstance(view, pb.SettingsView)
    assert (view.default_hard_limit.currency, view.default_hard_limit.minor_units) == ("USD", 250)
    again = call(app, "/codeflux.v1.SettingsService/GetSettings", pb.GetSettingsRequest())
    assert isinstance(again, pb.SettingsView) and again.default_hard_limit.minor_units == 250
    stale = control("d-2")
    stale.expected_revision = 7
    code, _ = refusal(app, "/codeflux.v1.SettingsService/SetBudgetDefaults",
                      pb.SetBudgetDefaultsRequest(control=stale, hard_limit="3.00", currency="USD"))
    assert code == Code.ABORTED
    for bad in ("2.505", "-1", "0", "1e3", "abc"):
        code, _ = refusal(app, "/codeflux.v1.SettingsService/SetBudgetDefaults",
                          pb.SetBudgetDefaultsRequest(control=control("d-3"), hard_limit=bad, currency="USD"))
        assert code == Code.INVALID_ARGUMENT, bad
    cleared = call(app, "/codeflux.v1.SettingsService/SetBudgetDefaults",
                   pb.SetBudgetDefaultsRequest(control=control("d-4"), hard_limit="", currency="USD"))
    assert isinstance(cleared, pb.SettingsView) and not cleared.HasField("default_hard_limit")
    kinds = db.read(lambda view: [r[0] for r in view.query_all(
        "SELECT kind FROM events WHERE session_id = 'ses_system' AND kind = 'budget-default-set'")])
    assert len(kinds) == 2


def test_with_nothing_saved_the_budget_default_is_the_environments_else_the_config_files(
        app: CoordinatorApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `[budget] default_hard_limit` in the config file left the browser's composer on "suggested 1.00": the
    Settings view now carries the default in force and where it comes from (saved here > CODEFLUX_BUDGET > file)."""
    config = tmp_path / "xdg" / "codeflux" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[budget]\ndefault_hard_limit = "2.50 USD"\n', encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("CODEFLUX_BUDGET", raising=False)

    def shown() -> tuple[int, str]:
        view = call(app, "/codeflux.v1.SettingsService/GetSettings", pb.GetSettingsRequest())
        assert isinstance(view, pb.SettingsView)
        return view.default_hard_limit.minor_units, view.default_hard_limit_source

    assert shown() == (250, "config file [budget] default_hard_limit")
    monkeypatch.setenv("CODEFLUX_BUDGET", "3.00")
    assert shown() == (300, "environment CODEFLUX_BUDGET")
    call(app, "/codeflux.v1.SettingsService/SetBudgetDefaults",
         pb.SetBudgetDefaultsRequest(control=control("d-env"), hard_limit="4.00", currency="USD"))
    assert shown() == (400, "settings")
    config.write_text("", encoding="utf-8")
    monkeypatch.delenv("CODEFLUX_BUDGET")
    call(app, "/codeflux.v1.SettingsService/SetBudgetDefaults",
         pb.SetBudgetDefaultsRequest(control=control("d-clear"), hard_limit="", currency="USD"))
    assert shown() == (0, "")  # the built-in $1.00 is `codeflux run`'s; the browser suggests, never presets it
    config.write_text("[budget]\ndefault_hard_limit = 2.5\n", encoding="utf-8")  # a float: refused by the file's rules
    assert shown() == (0, "")  # the Settings screen still opens; doctor names the bad key


@pytest.mark.parametrize("key", ["", "has space", "x" * 129])
def test_set_budget_defaults_without_a_valid_key_is_an_invalid_argument(app: CoordinatorApp, key: str) -> None:
    code, _ = refusal(app, "/codeflux.v1.SettingsService/SetBudgetDefaults",
                      pb.SetBudgetDefaultsRequest(control=control(key), hard_limit="5.00", currency="USD"))
    assert code == Code.INVALID_ARGUMENT


@pytest.mark.keyring
@pytest.mark.security
def test_a_stored_key_shows_as_stored_and_never_as_its_value(
    app: CoordinatorApp, db: Database, secret_service: keyring.backend.KeyringBackend
) -> None:
    key = a_test_key()
    reference = store_provider_key(ProviderName.ANTHROPIC, Secret(key))
    record_provider_credential_reference(db, provider="anthropic", credential_ref=str(reference))

    view = call(app, "/codeflux.v1.SettingsService/GetSettings", pb.GetSettingsRequest())

    assert isinstance(view, pb.SettingsView)
    by_name = {p.name: p for p in view.providers}
    assert by_name["anthropic"].credential_stored and by_name["anthropic"].reference_recorded
    assert by_name["anthropic"].detail == "a key is stored (not contacted)"
    assert not by_name["openai"].credential_stored and by_name["openai"].detail == "no key stored"
    assert key not in view.SerializeToString().decode("utf-8", errors="replace")


def test_the_clarification_policy_defaults_to_ask_and_is_set_with_an_event(app: CoordinatorApp, db: Database) -> None:
    assert call(app, "/codeflux.v1.SettingsService/GetSettings", pb.GetSettingsRequest()).clarification_policy == "ask"

    view = call(app, "/codeflux.v1.SettingsService/SetClarificationPolicy",
                pb.SetClarificationPolicyRequest(control=control("c-1"), policy="assume"))

    assert isinstance(view, pb.SettingsView) and view.clarification_policy == "assume"
    code, _ = refusal(app, "/codeflux.v1.SettingsService/SetClarificationPolicy",
                      pb.SetClarificationPolicyRequest(control=control("c-2"), policy="guess"))
    assert code == Code.INVALID_ARGUMENT
    kinds = [event.event.KIND.value for event in read_every_system_event(db)]
    assert kinds.count("clarification-policy-set") == 1
