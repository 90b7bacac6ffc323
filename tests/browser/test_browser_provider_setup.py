"""Settings → Providers in headless Chromium against a real coordinator with ``codeflux start``'s model access (no
--provider flag) and the real Secret Service: the scripted default says why; a key is stored from the browser (sent
once, never shown, only in the credential store); choosing anthropic and a model makes the composer and a new task
say so. No provider is contacted: the task gets no budget, so no plan is drafted."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import keyring.backend
import pytest
from playwright.sync_api import expect

from codeflux.cli import start
from codeflux.coordinator.spending.model_approvals import endpoint_approved
from codeflux.coordinator.spending.provider_choice import read_task_pin
from codeflux.credentials import load_provider_key
from codeflux.domain.ids import TaskId
from codeflux.domain.providers import ProviderName
from tests.fixtures.browser import WAIT_S, watched_page
from tests.fixtures.provider_servers import a_test_key

pytestmark = [pytest.mark.browser, pytest.mark.keyring, pytest.mark.security]
MS = WAIT_S * 1000
MODEL = "claude-sonnet-4-5"


def test_a_provider_and_key_set_in_settings_reach_the_composer_and_a_new_task(
        chromium: Any, served_coordinator: tuple[Any, Any], request: pytest.FixtureRequest,
        secret_service: keyring.backend.KeyringBackend, tmp_path: Path) -> None:
    server, coordinator = served_coordinator
    parser = argparse.ArgumentParser()
    start.configure(parser)
    coordinator.models = start.CliModelAccess(coordinator.db, parser.parse_args([]))
    key = a_test_key()
    with watched_page(chromium, server.launch_url(), request) as app:
        expect(app.testid("first-run")).to_be_visible(timeout=MS)
        app.testid("try-demo").click()
        expect(app.testid("composer-provider-label")).to_have_text("scripted demo — not an AI model", timeout=MS)

        app.testid("nav-settings").click()
        expect(app.testid("provider-current")).to_contain_text("because of the demo", timeout=MS)
        anthropic = app.page.locator('[data-testid="provider-option"][data-provider="anthropic"]')
        expect(anthropic.get_by_test_id("provider-key-status")).to_have_text("no key stored")
        expect(anthropic.get_by_test_id("provider-key-source")).to_have_text("none")
        expect(anthropic.get_by_test_id("provider-models")).to_contain_text(
            f"{MODEL} (claude-sonnet-4-5-20250929): input 3.00, output 15.00 USD")
        expect(app.page.locator('[data-testid="provider-option"][data-provider="scripted"]')).to_contain_text(
            "not an AI model")

        app.testid("key-provider").select_option("anthropic")
        app.testid("provider-key").fill(key)
        app.testid("provider-store-key").click()
        expect(app.testid("provider-key-result")).to_have_text(
            "anthropic: key stored in the OS credential store", timeout=MS)
        expect(app.page.locator('[data-testid="provider-option"][data-provider="anthropic"]').get_by_test_id(
            "provider-key-status")).to_have_text("a key is stored (not contacted)")
        expect(app.page.locator('[data-testid="provider-option"][data-provider="anthropic"]').get_by_test_id(
            "provider-key-source")).to_have_text("OS credential store")  # where a call's key comes from
        expect(app.testid("provider-key")).to_have_value("")
        assert load_provider_key(ProviderName.ANTHROPIC).reveal() == key  # positive control: it reached the store

        app.testid("provider-choice").select_option("anthropic")
        app.testid("provider-cheap-model").fill(MODEL)
        app.testid("provider-save").click()
        expect(app.testid("provider-current-label")).to_have_text(f"anthropic ({MODEL})", timeout=MS)
        expect(app.testid("provider-current")).to_contain_text("the choice stored here")
        expect(app.testid("appbar-provider")).to_contain_text(f"anthropic ({MODEL})")

        app.testid("nav-workspace").click()
        expect(app.testid("composer-provider-label")).to_have_text(f"anthropic ({MODEL})", timeout=MS)
        app.testid("task-budget").fill("")
        app.testid("create-task").click()  # no budget: no plan is drafted, so nothing is sent to anthropic
        expect(app.testid("task-provider-label")).to_have_text(f"Provider: anthropic ({MODEL})", timeout=MS)
        page_text = app.page.content()

    coordinator.db.checkpoint_wal()
    data = b"".join(p.read_bytes() for p in sorted(Path(coordinator.location.directory).rglob("*")) if p.is_file())
    assert key not in page_text and key.encode() not in data


def test_an_openai_compatible_endpoint_set_in_settings_is_validated_shown_back_and_pinned_by_a_new_task(
        chromium: Any, served_coordinator: tuple[Any, Any], request: pytest.FixtureRequest) -> None:
    """openai-compatible's base URL and "no key" set in the browser: a URL the endpoint rules refuse is refused with
    its reason and nothing is stored; an accepted one is stored normalized and shown back; a task created then pins
    it, says why, and keeps showing it after the choice changes; the task's "Needs you" card approves exactly its
    pinned endpoint, and Settings' card the stored choice's. Nothing is contacted (no budget, so no plan is
    drafted)."""
    server, coordinator = served_coordinator
    parser = argparse.ArgumentParser()
    start.configure(parser)
    coordinator.models = start.CliModelAccess(coordinator.db, parser.parse_args([]))
    pinned = "openai-compatible (local-model) at http://127.0.0.1:4000/v1"
    with watched_page(chromium, server.launch_url(), request) as app:
        expect(app.testid("first-run")).to_be_visible(timeout=MS)
        app.testid("try-demo").click()
        expect(app.testid("composer-provider-label")).to_have_text("scripted demo — not an AI model", timeout=MS)

        app.testid("nav-settings").click()
        expect(app.testid("provider-current")).to_contain_text("because of the demo", timeout=MS)
        expect(app.testid("provider-endpoint-fields")).to_be_hidden()
        app.testid("provider-choice").select_option("openai-compatible")
        expect(app.testid("provider-endpoint-fields")).to_be_visible()
        app.testid("provider-cheap-model").fill("local-model")
        app.testid("provider-base-url").fill("http://192.0.2.1:4000/v1")
        app.testid("provider-save").click()
        expect(app.testid("error")).to_contain_text(
            "the openai-compatible endpoint is refused: http is allowed only for a loopback host", timeout=MS)
        expect(app.testid("provider-current")).to_contain_text("because of the demo")  # nothing was stored

        app.testid("provider-base-url").fill("HTTP://127.0.0.1:4000/v1/")
        app.testid("provider-no-key").check()
        app.testid("provider-save").click()
        expect(app.testid("provider-current-label")).to_have_text(pinned, timeout=MS)
        expect(app.testid("provider-chosen-endpoint")).to_contain_text(
            "Stored endpoint: http://127.0.0.1:4000/v1 (no key is sent)")
        expect(app.testid("provider-base-url")).to_have_value("http://127.0.0.1:4000/v1")  # shown back, normalized
        expect(app.testid("provider-no-key")).to_be_checked()
        expect(app.testid("provider-choice")).to_have_value("openai-compatible")
        expect(app.testid("provider-chosen-endpoint")).to_contain_text("not approved")
        expect(app.testid("provider-approve-endpoint")).to_be_visible()  # its card: approved from here or the task

        app.testid("nav-workspace").click()
        expect(app.testid("composer-provider-label")).to_have_text(pinned, timeout=MS)
        app.testid("task-budget").fill("")
        app.testid("create-task").click()
        expect(app.testid("task-provider-label")).to_have_text(f"Provider: {pinned}", timeout=MS)
        expect(app.testid("task-provider-why")).to_have_text(
            "Pinned when the task was created, because of the choice stored in Settings → Providers.")
        expect(app.page.locator('[data-testid="needs-you-item"][data-need="endpoint"]')).to_contain_text(
            "sends to http://127.0.0.1:4000/v1 (openai-compatible), an endpoint nobody approved")
        task_id = app.page.url.rsplit("/", 1)[-1]

        app.testid("nav-settings").click()
        app.testid("provider-choice").select_option("scripted")
        app.testid("provider-save").click()
        expect(app.testid("provider-current-label")).to_have_text("scripted demo — not an AI model", timeout=MS)
        expect(app.testid("provider-chosen-endpoint")).to_have_count(0)

        app.testid("nav-workspace").click()
        app.page.locator(f'[data-testid="task-item"][data-task-id="{task_id}"]').click()
        expect(app.testid("task-provider-label")).to_have_text(f"Provider: {pinned}", timeout=MS)  # its pin
        assert not endpoint_approved(coordinator.db, provider=ProviderName.OPENAI_COMPATIBLE,
                                     base_url="http://127.0.0.1:4000/v1")
        app.testid("needs-you-endpoint").click()  # the task's card, answered with its confirmation
        expect(app.testid("needs-you-endpoint")).to_have_count(0, timeout=MS)
        expect(app.testid("task-provider-why")).to_contain_text("the choice stored in Settings → Providers")

        app.testid("nav-settings").click()  # Settings' card: the stored choice's endpoint, approved from there
        app.testid("provider-choice").select_option("openai-compatible")
        app.testid("provider-cheap-model").fill("local-model")
        app.testid("provider-base-url").fill("http://127.0.0.1:4001/v1")
        app.testid("provider-save").click()
        expect(app.testid("provider-chosen-endpoint")).to_contain_text("not approved", timeout=MS)
        app.testid("provider-approve-endpoint").click()
        expect(app.testid("provider-chosen-endpoint")).to_contain_text("approved (or the provider's default)",
                                                                     timeout=MS)
        expect(app.testid("provider-approve-endpoint")).to_have_count(0)

    pin = read_task_pin(coordinator.db, TaskId.parse(task_id))
    assert pin is not None and (pin.choice.base_url, pin.choice.uses_key, pin.source) == (
        "http://127.0.0.1:4000/v1", False, "settings")
    assert all(endpoint_approved(coordinator.db, provider=ProviderName.OPENAI_COMPATIBLE, base_url=url)
               for url in ("http://127.0.0.1:4000/v1", "http://127.0.0.1:4001/v1"))


def test_settings_approves_a_start_base_url_flags_endpoint_and_names_codeflux_provider_as_itself(
        chromium: Any, served_coordinator: tuple[Any, Any], request: pytest.FixtureRequest) -> None:
    """`codeflux start --provider anthropic --base-url URL`: Settings → Providers had no card for that endpoint (only
    the stored choice's got one), so every call was refused with nothing to approve in the browser. Its card now
    approves exactly that URL. And CODEFLUX_PROVIDER is named as itself, not as the flag it stands for."""
    server, coordinator = served_coordinator
    parser = argparse.ArgumentParser()
    start.configure(parser)
    proxy = "https://llm-proxy.example.com/v1"
    coordinator.models = start.CliModelAccess(coordinator.db, parser.parse_args(
        ["--provider", "anthropic", "--cheap-model", "claude-haiku-4-5", "--base-url", proxy + "/"]))
    with watched_page(chromium, server.launch_url(), request) as app:
        app.testid("nav-settings").click()
        expect(app.testid("provider-current-endpoint-text")).to_contain_text(
            f"New tasks' provider (anthropic) sends to {proxy}, an endpoint nobody approved", timeout=MS)
        expect(app.testid("provider-chosen-endpoint")).to_have_count(0)  # nothing is stored here
        assert not endpoint_approved(coordinator.db, provider=ProviderName.ANTHROPIC, base_url=proxy)
        app.testid("provider-approve-current-endpoint").click()  # answered with the card's confirmation
        expect(app.testid("provider-current-endpoint")).to_have_count(0, timeout=MS)
        expect(app.testid("settings-endpoints")).to_contain_text(f"anthropic: {proxy}")
        assert endpoint_approved(coordinator.db, provider=ProviderName.ANTHROPIC, base_url=proxy)

        coordinator.models = start.CliModelAccess(coordinator.db, parser.parse_args([]),
                                                  {"CODEFLUX_PROVIDER": "scripted"})
        app.testid("nav-workspace").click()
        app.testid("nav-settings").click()
        expect(app.testid("provider-current")).to_contain_text(
            "because of CODEFLUX_PROVIDER in the environment `codeflux start` was given", timeout=MS)
        expect(app.testid("provider-flag-wins")).to_contain_text("CODEFLUX_PROVIDER")
