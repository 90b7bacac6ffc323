"""Issue 21, item 4 (the rest) and item 10 (per-model output bound): what the config file and the environment set.

The precedence of every value is flag > environment (``CODEFLUX_*``) > config file > built-in, checked as a table;
the config file's budget default, ladder and pipeline thresholds reach the commands that read them; a model's
configured ``max_output_tokens`` is what its requests carry, clamped to its context window, checked on the wire of
a loopback server speaking the providers' formats. Real SQLite, real subprocesses; no network.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from codeflux.cli.demo import DEMO_TEST_COMMAND
from codeflux.cli.run import build_gateway, with_configured_provider
from codeflux.coordinator import provider_keys
from codeflux.coordinator.runs.configured import check_settings_in_force, configured_thresholds
from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.coordinator.user_config import load_user_config, resolve_defaults
from codeflux.credentials import HeldKeys, environment_keys
from codeflux.credentials.secret import Secret
from codeflux.domain.budget import bound_input_tokens
from codeflux.domain.errors import (
    ContextTooLongError,
    ContextWindowFullError,
    EndpointApprovalRequiredError,
    InvalidValueError,
)
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import DEFAULT_LADDER, Ladder, LadderPosition
from codeflux.domain.models import Message, ModelRequest
from codeflux.domain.money import USD, Money
from codeflux.domain.pricing import Price
from codeflux.domain.providers import ChoiceSource, ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.pipeline.thresholds import PATH_COVERAGE_MIN, StoredSettings, set_threshold, threshold_of
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.providers.openai_compatible import OpenAICompatibleAdapter
from codeflux.providers.transport import ProviderHttp
from codeflux.redact import Redactor
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.model_requests import model_request_by_key
from codeflux.store.tasks import insert_task
from tests.fixtures.cli import CliRun, run_codeflux
from tests.fixtures.provider_servers import (
    ProviderServer,
    SleepRecorder,
    a_test_key,
    anthropic_message,
    json_reply,
    openai_completion,
)
from tests.fixtures.task_runs import repository_environment


def write_config(home: Path, text: str) -> dict[str, str]:
    """``text`` as ``$XDG_CONFIG_HOME/codeflux/config.toml`` under ``home``; the environment that finds it."""
    path = home / "xdg" / "codeflux" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return {"XDG_CONFIG_HOME": str(home / "xdg"), "HOME": str(home)}


CONFIG = ('[provider]\nname = "anthropic"\ncheap_model = "claude-haiku-4-5"\ncapable_model = "claude-sonnet-4-5"\n'
          '[budget]\ndefault_hard_limit = "2.50 USD"\n')


# ─── the precedence table: flag > environment > config file > built-in ───────────────────────────────────────


@pytest.mark.parametrize(("flag", "env", "config", "expected", "source"), [
    ("openai", "openai-compatible", True, "openai", "flag --provider"),
    (None, "openai", True, "openai", "environment CODEFLUX_PROVIDER"),
    (None, None, True, "anthropic", "config file [provider] name"),
    (None, None, False, "scripted", "built-in"),
])
def test_the_provider_is_the_flag_else_the_environment_else_the_file_else_scripted(
        tmp_path: Path, *, flag: str | None, env: str | None, config: bool, expected: str, source: str) -> None:
    environ = write_config(tmp_path, CONFIG if config else "")
    if env is not None:
        environ["CODEFLUX_PROVIDER"] = env
    chosen = resolve_defaults({"provider": flag}, environ).provider
    assert (chosen.value, chosen.source) == (expected, source)


@pytest.mark.parametrize(("flag", "env", "config", "expected", "source"), [
    ("gpt-flag", "gpt-env", True, "gpt-flag", "flag --cheap-model"),
    (None, "gpt-env", True, "gpt-env", "environment CODEFLUX_CHEAP_MODEL"),
    (None, None, True, "claude-haiku-4-5", "config file [provider] cheap_model"),
    (None, None, False, "claude-haiku-4-5", "built-in"),  # the provider's built-in pair when no model is named
])
def test_the_cheap_model_follows_the_same_table(tmp_path: Path, *, flag: str | None, env: str | None, config: bool,
                                                expected: str, source: str) -> None:
    environ = write_config(tmp_path, CONFIG if config else "")
    if env is not None:
        environ["CODEFLUX_CHEAP_MODEL"] = env
    chosen = resolve_defaults({"provider": "anthropic", "cheap_model": flag}, environ).cheap_model
    assert (chosen.value, chosen.source) == (expected, source)


@pytest.mark.parametrize(("provider", "flags", "expected"), [
    ("anthropic", {}, ("claude-haiku-4-5", "claude-sonnet-4-5")),
    ("openai", {}, ("gpt-5-mini", "gpt-5")),
    ("openai-compatible", {}, ("", "")),  # a server's models are its own: no default
    ("anthropic", {"cheap_model": "claude-opus-4-1"}, ("claude-opus-4-1", "")),  # one named: never a dearer default
    ("anthropic", {"capable_model": "claude-opus-4-1"}, ("", "claude-opus-4-1")),
])
def test_a_provider_named_without_models_takes_its_built_in_pair(
        tmp_path: Path, provider: str, flags: dict[str, str], expected: tuple[str, str]) -> None:
    chosen = resolve_defaults({"provider": provider, **flags}, write_config(tmp_path, ""))
    assert (chosen.cheap_model.value, chosen.capable_model.value) == expected


@pytest.mark.parametrize(("flag", "env", "config", "expected", "source"), [
    ("4.00", "3.00", True, Money(minor=400, currency=USD), "flag --budget"),
    (None, "3.00", True, Money(minor=300, currency=USD), "environment CODEFLUX_BUDGET"),
    (None, "3.10 USD", True, Money(minor=310, currency=USD), "environment CODEFLUX_BUDGET"),
    (None, None, True, Money(minor=250, currency=USD), "config file [budget] default_hard_limit"),
    (None, None, False, Money(minor=100, currency=USD), "built-in"),
])
def test_the_budget_follows_the_same_table(tmp_path: Path, *, flag: str | None, env: str | None, config: bool,
                                           expected: Money, source: str) -> None:
    environ = write_config(tmp_path, CONFIG if config else "")
    if env is not None:
        environ["CODEFLUX_BUDGET"] = env
    chosen = resolve_defaults({"budget": flag}, environ)
    assert (chosen.budget, chosen.budget_source) == (expected, source)


def test_models_from_the_file_or_environment_apply_only_to_their_own_provider(tmp_path: Path) -> None:
    environ = write_config(tmp_path, CONFIG) | {"CODEFLUX_PROVIDER": "openai", "CODEFLUX_CHEAP_MODEL": "gpt-5-mini"}
    # a --provider flag naming a third provider takes neither the environment's model nor the file's
    other = resolve_defaults({"provider": "openai-compatible"}, environ)
    assert (other.cheap_model.value, other.cheap_model.source) == ("", "built-in")
    # the environment's provider takes the environment's model, not the file's (another provider's)
    env = resolve_defaults({}, environ)
    assert (env.provider.value, env.cheap_model.value, env.capable_model.value) == ("openai", "gpt-5-mini", "")
    # the file's provider named by a flag takes the file's models
    named = resolve_defaults({"provider": "anthropic"}, {k: v for k, v in environ.items()
                                                          if k != "CODEFLUX_CHEAP_MODEL"})
    assert (named.cheap_model.value, named.capable_model.value) == ("claude-haiku-4-5", "claude-sonnet-4-5")


@pytest.mark.parametrize(("name", "value"), [("CODEFLUX_PROVIDER", "gpt"), ("CODEFLUX_BUDGET", "1.5e3"),
                                             ("CODEFLUX_BUDGET", "0"), ("CODEFLUX_CHEAP_MODEL", "a\nb")])
def test_a_bad_environment_value_is_refused_naming_the_variable(tmp_path: Path, name: str, value: str) -> None:
    environ = write_config(tmp_path, "") | {"CODEFLUX_PROVIDER": "openai", name: value}
    with pytest.raises(InvalidValueError, match=name):
        resolve_defaults({}, environ)


def test_run_takes_the_environments_provider_and_pins_it_as_the_environment(tmp_path: Path) -> None:
    from codeflux.cli.run import _PIN_SOURCE

    environ = write_config(tmp_path, CONFIG) | {"CODEFLUX_PROVIDER": "scripted"}
    args = argparse.Namespace(provider=None, cheap_model=None, capable_model=None, base_url=None)
    chosen = with_configured_provider(args, environ)
    assert (chosen.provider, chosen.provider_source) == ("scripted", "environment CODEFLUX_PROVIDER")
    # what `codeflux run` pins for it: the environment as itself (it was recorded as the flag it stands for)
    assert _PIN_SOURCE[chosen.provider_source.split(" ")[0]] is ChoiceSource.ENVIRONMENT


def test_start_ranks_the_environment_with_a_flag_above_the_file(db: Database, tmp_path: Path) -> None:
    from codeflux.cli import start

    parser = argparse.ArgumentParser()
    start.configure(parser)
    environ = write_config(tmp_path, CONFIG)
    assert start.CliModelAccess(db, parser.parse_args([]), environ).source == "config"
    environ["CODEFLUX_PROVIDER"] = "scripted"
    by_env = start.CliModelAccess(db, parser.parse_args([]), environ)
    assert (by_env.source, by_env.scripted) == ("environment", True)  # its own source, at the flag's rank
    assert by_env.pin_for_new_task().source is ChoiceSource.ENVIRONMENT
    environ["CODEFLUX_PROVIDER"] = "anthropic"
    flagged = start.CliModelAccess(db, parser.parse_args(["--provider", "scripted"]), environ)
    assert (flagged.source, flagged.scripted) == ("flag", True)  # a flag still wins over the environment


# ─── the ladder and the budget default reach `codeflux run` ────────────────────────────────────────────────


def test_build_gateway_carries_the_configured_ladder_and_stall_threshold(db: Database, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    args = argparse.Namespace(provider="scripted", cheap_model=None, capable_model=None, base_url=None, script=None,
                              no_key=False)
    for name, value in write_config(tmp_path, "").items():
        monkeypatch.setenv(name, value)
    plain = build_gateway(db, args, phases=("plan",))[0]
    assert (plain.ladder, plain.stall_threshold) == (DEFAULT_LADDER, 3)
    write_config(tmp_path, '[ladder]\nrungs = ["cheap:high", "capable:high", "capable:max"]\nstall_threshold = 2\n')
    gateway = build_gateway(db, args, phases=("plan",))[0]
    assert gateway.ladder == Ladder.parse(["cheap:high", "capable:high", "capable:max"])
    assert gateway.start_position() == LadderPosition.start(gateway.ladder, stall_threshold=2)


@pytest.mark.parametrize("route", [("anthropic", "claude-haiku-4-5", "/v1/messages"),
                                   ("openai", "gpt-5-mini", "/v1/chat/completions")])
def test_a_base_url_for_anthropic_or_openai_is_where_the_calls_go_once_approved(
        db: Database, tmp_path: Path, server: ProviderServer, monkeypatch: pytest.MonkeyPatch,
        route: tuple[str, str, str]) -> None:
    """`--base-url` (a proxy speaking the provider's API) was used by openai-compatible only: an anthropic or openai
    gateway called the provider's default endpoint whatever the flag said, while Settings asked to approve the
    flag's endpoint."""
    provider, model, path = route
    for name, value in write_config(tmp_path, "").items():
        monkeypatch.setenv(name, value)
    # the keys this process would hold had it started with the provider's variable set (read once per process)
    found, ignored = environment_keys({f"{provider.upper()}_API_KEY": a_test_key()})
    monkeypatch.setattr(provider_keys, "_process_keys", HeldKeys(found, ignored=ignored))
    base_url = server.base_url + ("/v1" if provider == "openai" else "")
    args = argparse.Namespace(provider=provider, cheap_model=model, capable_model=None, base_url=base_url,
                              script=None, no_key=False)
    task_id = _task(db, tmp_path)
    gateway = build_gateway(db, args, phases=("plan",))[0]
    with pytest.raises(EndpointApprovalRequiredError):  # the proxy is refused until approved; nothing is sent
        gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="call-1")
    gateway.close()
    assert server.requests == []
    approve_model_endpoint(db, provider=ProviderName(provider), base_url=base_url)
    server.enqueue(json_reply(
        anthropic_message(content=[{"type": "text", "text": "ok"}], model=model,
                          usage={"input_tokens": 10, "output_tokens": 2}) if provider == "anthropic"
        else openai_completion(content="ok", usage=USAGE, model=model)))

    approved = build_gateway(db, args, phases=("plan",))[0]
    try:
        approved.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="call-2")
    finally:
        approved.close()

    (request,) = server.requests
    assert request.path == path


def _cli(data: Path, environ: dict[str, str], *args: str) -> CliRun:
    path = f"{repository_environment() / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    result = run_codeflux(*args, data_dir=data, env={"PATH": path, **environ})
    print(f"$ codeflux {' '.join(args)}\n{result.out}{result.err}exit {result.code}\n")
    return result


def _demo(tmp_path: Path, environ: dict[str, str]) -> tuple[Path, Path]:
    repo, data = tmp_path / "demo", tmp_path / "data"
    assert _cli(data, environ, "demo", "init", str(repo)).code == 0
    return repo, data


def _rows(data: Path, sql: str) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(data / "codeflux.sqlite3")) as connection:
        return connection.execute(sql).fetchall()


def test_run_plans_on_the_configured_ladders_bottom_rung_with_the_budget_default(tmp_path: Path) -> None:
    environ = write_config(tmp_path, '[budget]\ndefault_hard_limit = "2.50 USD"\n'
                                     '[ladder]\nrungs = ["cheap:high", "capable:high"]\n')
    repo, data = _demo(tmp_path, environ)
    ran = _cli(data, environ, "run", "--repo", str(repo), "--requirement-file", str(repo / "TASK.md"))

    assert ran.code == 4, ran.out + ran.err  # stops after the plan (no --yes)
    assert "budget $2.50 hard limit" in ran.out
    assert {rung for (rung,) in _rows(data, "SELECT rung FROM model_requests")} == {"cheap:high"}

    # CODEFLUX_BUDGET ranks above the file (and a --budget flag above both)
    again = _cli(data, environ | {"CODEFLUX_BUDGET": "3.00"}, "run", "--repo", str(repo), "--requirement-file",
                 str(repo / "TASK.md"))
    assert "budget $3.00 hard limit" in again.out, again.out
    flagged = _cli(data, environ | {"CODEFLUX_BUDGET": "3.00"}, "run", "--repo", str(repo), "--requirement-file",
                   str(repo / "TASK.md"), "--budget", "4.00")
    assert "budget $4.00 hard limit" in flagged.out, flagged.out


# ─── pipeline thresholds ────────────────────────────────────────────────────────────────────────────────────


def test_a_pipeline_threshold_comes_from_a_stored_setting_else_the_file_else_the_default(
        db: Database, tmp_path: Path) -> None:
    environ = write_config(tmp_path, '[pipeline]\n"path-coverage.min-percent" = 85\n')
    configured = configured_thresholds(load_user_config(environ), environ)
    assert configured == {"pipeline.path-coverage.min-percent": 85}

    assert threshold_of(StoredSettings(db), PATH_COVERAGE_MIN).value == 90  # the default without the file
    from_file = threshold_of(StoredSettings(db, configured), PATH_COVERAGE_MIN)
    assert (from_file.value, from_file.source) == (85, "config file [pipeline] path-coverage.min-percent")
    revision = set_threshold(db, PATH_COVERAGE_MIN, 95, expected_revision=None)
    stored = threshold_of(StoredSettings(db, configured), PATH_COVERAGE_MIN)
    assert (stored.value, stored.source) == (95, f"setting pipeline.path-coverage.min-percent, revision {revision}")


@pytest.mark.parametrize(("text", "named"), [
    ('[pipeline]\n"path-coverage.min-percnt" = 85\n', "[pipeline] path-coverage.min-percnt"),
    ('[pipeline]\n"path-coverage.min-percent" = 101\n', "[pipeline] path-coverage.min-percent"),
    ('[pipeline]\n"pipeline.concurrency" = 2\n', "[pipeline] pipeline.concurrency"),  # keys go without "pipeline."
])
def test_an_unknown_or_out_of_range_threshold_is_refused_naming_it(tmp_path: Path, text: str, named: str) -> None:
    environ = write_config(tmp_path, text)
    with pytest.raises(InvalidValueError) as refused:
        configured_thresholds(load_user_config(environ), environ)
    assert named in str(refused.value) and "config.toml" in str(refused.value)


def test_the_demo_runs_stage_16_with_the_configured_complexity_bound(tmp_path: Path) -> None:
    environ = write_config(tmp_path, '[pipeline]\n"atom-complexity.max" = 12\n')
    repo, data = _demo(tmp_path, environ)
    ran = _cli(data, environ, "run", "--repo", str(repo), "--requirement-file", str(repo / "TASK.md"),
               "--provider", "scripted", "--allow", f"run_command:{DEMO_TEST_COMMAND}", "--allow-check-tools", "--yes")

    assert ran.code == 0, ran.out + ran.err
    (stored,), = _rows(data, "SELECT evidence_json FROM stage_ledger WHERE stage = 'atom-complexity'")
    assert json.loads(str(stored))["threshold"] == {"key": "pipeline.atom-complexity.max", "value": 12,
                                                    "source": "config file [pipeline] atom-complexity.max",
                                                    "default": 10}


# ─── item 10: the output bound is a per-model setting, clamped to the model's context window ───────────────


MODEL = "llama-3.1-8b-local"  # not in the capability table: the conservative 32,768-token window
REQUEST = ModelRequest(model="chosen-by-the-rung", system="You are terse.",
                       messages=(Message.user_text("Say ok."),), max_output_tokens=256)
USAGE = {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22}
REQUEST_INPUT = bound_input_tokens(REQUEST)  # the estimate the clamp subtracts from the window


def _task(db: Database, tmp_path: Path) -> TaskId:
    task_id = TaskId.from_entropy(os.urandom(16))
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "repo",
                                    worktree=tmp_path / "worktree", state=TaskState.RUNNING))
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=1_000_000, currency=USD), expected_revision=None,
                                 idempotency_key="budget-1")
    return task_id


def _compatible_gateway(db: Database, server: ProviderServer, output_tokens: dict[str, int]
                        ) -> tuple[ModelGateway, OpenAICompatibleAdapter]:
    redactor = Redactor()
    base_url = server.base_url + "/v1"
    adapter = OpenAICompatibleAdapter(base_url=base_url, uses_key=False, redactor=redactor,
                                      http=ProviderHttp(provider="OpenAI-compatible", redactor=redactor,
                                                        sleep=SleepRecorder(), jitter=lambda: 1.0))
    approve_model_endpoint(db, provider=ProviderName.OPENAI_COMPATIBLE, base_url=base_url)
    price = Price.from_per_million_tokens(currency=USD, input_per_million="1.00", output_per_million="2.00")
    PriceCatalog(db).set_user_price(provider="openai-compatible", model=MODEL, price=price,
                                    effective_date=dt.date(2026, 1, 1))
    route = ModelRoute(provider="openai-compatible", adapter=adapter, cheap_model=MODEL, capable_model=MODEL,
                       redactor=redactor, output_tokens=output_tokens)
    return ModelGateway(db, [route]), adapter


@pytest.mark.parametrize(("configured", "sent"), [
    ({}, 256),  # nothing configured: the caller's bound
    ({MODEL: 4096}, 4096),  # the model's setting replaces it
    ({MODEL: 100_000}, 32_768 - REQUEST_INPUT),  # beyond the window less the input: clamped, never sent as it is
    ({"another-model": 100_000}, 256),  # another model's setting does not apply
])
def test_an_openai_compatible_request_carries_the_models_bound_clamped_to_its_window(
        db: Database, tmp_path: Path, server: ProviderServer, configured: dict[str, int], sent: int) -> None:
    task_id = _task(db, tmp_path)
    gateway, adapter = _compatible_gateway(db, server, configured)
    server.enqueue(json_reply(openai_completion(content="ok", usage=USAGE, model=MODEL)))
    with adapter:
        gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="call-1")

    (request,) = server.requests
    assert request.json()["max_tokens"] == sent
    row = db.read(lambda view: model_request_by_key(view, task_id=task_id, idempotency_key="call-1"))
    assert row is not None and row.plan.max_output_tokens == sent  # the request's record says what was sent
    said = gateway.output_bound(MODEL, 256, input_tokens=REQUEST_INPUT)
    assert said[0] == (sent if configured.get(MODEL) else 256)
    if sent == 32_768 - REQUEST_INPUT:
        assert (f"clamped to the {sent:,} tokens the model's 32,768-token context window leaves after about "
                f"{REQUEST_INPUT:,} estimated input tokens") in said[1]
        assert "clamped to the model's 32,768-token context window" in gateway.output_bound(MODEL, 256)[1]


def test_an_anthropic_request_is_clamped_to_claudes_window(db: Database, tmp_path: Path,
                                                            server: ProviderServer) -> None:
    task_id = _task(db, tmp_path)
    redactor = Redactor()
    key = a_test_key()
    adapter = AnthropicAdapter(base_url=server.base_url, key_loader=lambda _: Secret(key), redactor=redactor,
                               http=ProviderHttp(provider="Anthropic", redactor=redactor, sleep=SleepRecorder(),
                                                 jitter=lambda: 1.0), prompt_cache=False)
    approve_model_endpoint(db, provider=ProviderName.ANTHROPIC, base_url=server.base_url)
    route = ModelRoute(provider="anthropic", adapter=adapter, cheap_model="claude-haiku-4-5",
                       capable_model="claude-haiku-4-5", redactor=redactor,
                       output_tokens={"claude-haiku-4-5": 500_000})
    gateway = ModelGateway(db, [route])
    server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "ok"}], model="claude-haiku-4-5",
                                                usage={"input_tokens": 10, "output_tokens": 2})))
    with adapter:
        gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="call-1")

    (request,) = server.requests
    # Claude's standard window less the request's estimated input, not 500,000 (nor the whole window)
    assert request.json()["max_tokens"] == 200_000 - REQUEST_INPUT


def test_a_request_whose_input_fills_the_window_is_not_sent_and_the_refusal_names_the_numbers(
        db: Database, tmp_path: Path, server: ProviderServer) -> None:
    task_id = _task(db, tmp_path)
    gateway, adapter = _compatible_gateway(db, server, {MODEL: 4096})
    # ≈ 32,000 tokens of input: the 32,768-token window leaves fewer than the 1,024 a turn needs
    huge = ModelRequest(model="chosen-by-the-rung", system="You are terse.", max_output_tokens=256,
                        messages=(Message.user_text("word " * 25_000),))
    estimate = bound_input_tokens(huge)
    assert 32_768 - 1024 < estimate < 40_000
    with adapter, pytest.raises(ContextWindowFullError) as refused:
        gateway.call(task_id, huge, position=LadderPosition.start(), idempotency_key="call-1")

    assert isinstance(refused.value, ContextTooLongError)  # the loop compacts and asks once more, as for a provider's
    assert (refused.value.model, refused.value.window, refused.value.input_tokens) == (MODEL, 32_768, estimate)
    assert (f"the request to {MODEL} does not fit its 32,768-token context window: about {estimate:,} estimated "
            f"input tokens leave {max(32_768 - estimate, 0):,} for output, fewer than 1,024; not sent") in str(
        refused.value)
    assert server.requests == []  # nothing reached the provider
    assert db.read(lambda view: model_request_by_key(view, task_id=task_id, idempotency_key="call-1")) is None


def test_a_window_leaving_less_than_asked_but_enough_for_a_turn_sends_what_it_leaves(
        db: Database, tmp_path: Path, server: ProviderServer) -> None:
    task_id = _task(db, tmp_path)
    gateway, adapter = _compatible_gateway(db, server, {MODEL: 16_384})
    request = ModelRequest(model="chosen-by-the-rung", system="You are terse.", max_output_tokens=256,
                           messages=(Message.user_text("word " * 20_000),))
    room = 32_768 - bound_input_tokens(request)
    assert 1024 <= room < 16_384
    server.enqueue(json_reply(openai_completion(content="ok", usage=USAGE, model=MODEL)))
    with adapter:
        gateway.call(task_id, request, position=LadderPosition.start(), idempotency_key="call-1")

    assert server.requests[0].json()["max_tokens"] == room
    row = db.read(lambda view: model_request_by_key(view, task_id=task_id, idempotency_key="call-1"))
    assert row is not None and row.plan.max_output_tokens == room


def test_a_turn_cut_at_the_configured_bound_is_asked_again_with_a_larger_one(
        db: Database, tmp_path: Path, server: ProviderServer) -> None:
    task_id = _task(db, tmp_path)
    gateway, adapter = _compatible_gateway(db, server, {MODEL: 4096})
    for _ in range(3):
        server.enqueue(json_reply(openai_completion(content="ok", usage=USAGE, model=MODEL)))
    with adapter:
        gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="call-1")
        gateway.call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="call-2", more_room=True)
        gateway.call(task_id, replace(REQUEST, max_output_tokens=16_384), position=LadderPosition.start(),
                     idempotency_key="call-3", more_room=True)

    # the configured bound, then twice it (the caller asked less), then what the caller asked (more than twice it)
    assert [request.json()["max_tokens"] for request in server.requests] == [4096, 8192, 16_384]
    rows = [db.read(lambda view, key=key: model_request_by_key(view, task_id=task_id, idempotency_key=key))
            for key in ("call-1", "call-2", "call-3")]
    assert [row.plan.max_output_tokens for row in rows if row is not None] == [4096, 8192, 16_384]  # recorded
    assert gateway.output_bound(MODEL, 256, more_room=True)[1] == (
        f"8,192 to ask again a turn cut at the 4,096 configured for {MODEL}")


def test_doctor_says_the_clamp_and_where_each_value_came_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               data_location: DataLocation) -> None:
    environ = write_config(tmp_path, CONFIG + '[models."claude-haiku-4-5"]\nmax_output_tokens = 500000\n'
                                              '[models."claude-sonnet-4-5"]\nmax_output_tokens = 8000\n')
    for name, value in (environ | {"CODEFLUX_BUDGET": "3.00"}).items():
        monkeypatch.setenv(name, value)
    result = check_settings_in_force(data_location)
    assert result.status.value == "ok", result.summary
    for said in ("provider anthropic (config file [provider] name)",
                 "cheap model claude-haiku-4-5 (config file [provider] cheap_model)",
                 "budget $3.00 (environment CODEFLUX_BUDGET)",
                 "ladder cheap:low → cheap:max → capable:low → capable:high, stall threshold 3 (built-in)",
                 "claude-haiku-4-5 max_output_tokens 500,000, clamped to 200,000",
                 "claude-sonnet-4-5 max_output_tokens 8,000 (config file [models])"):
        assert said in result.summary, result.summary
    monkeypatch.setenv("CODEFLUX_PROVIDER", "gpt")
    refused = check_settings_in_force(data_location)
    assert refused.status.value == "failed" and "CODEFLUX_PROVIDER" in refused.summary
    monkeypatch.delenv("CODEFLUX_PROVIDER")
    write_config(tmp_path, CONFIG + '[pipeline]\n"path-coverage.min-percnt" = 85\n')
    unknown = check_settings_in_force(data_location)
    assert unknown.status.value == "failed" and "[pipeline] path-coverage.min-percnt" in unknown.summary


def test_the_coordinators_plan_drafts_and_runs_climb_the_configured_ladder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The browser's path (TaskService/DraftPlan, then the scheduler's run thread) starts on the configured
    ladder's bottom rung, as `codeflux run` does."""
    from tests.fixtures.service_runs import running_coordinator, start_ready

    for name, value in write_config(tmp_path / "home", '[ladder]\nrungs = ["cheap:medium", "capable:high"]\n'
                                    ).items():
        monkeypatch.setenv(name, value)
    with contextlib.ExitStack() as stack:
        c = stack.enter_context(contextlib.contextmanager(running_coordinator)(tmp_path, monkeypatch))
        waiting = start_ready(c)
        assert waiting.state == "awaiting-authority", waiting.state
        rungs = c.app.db.read(lambda view: view.query_all("SELECT DISTINCT rung FROM model_requests"))
    assert [tuple(row) for row in rungs] == [("cheap:medium",)]
