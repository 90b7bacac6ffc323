"""The user's config file (``$XDG_CONFIG_HOME/codeflux/config.toml``): defaults for what flags otherwise say.

Precedence, highest first, per value: a command-line flag, the environment (``CODEFLUX_PROVIDER``, …:
:mod:`codeflux.coordinator.user_config`), the choice stored in Settings → Providers (the browser), this file, the
built-in default (the scripted provider, not an AI model; a $1.00 budget). The file is read, never written, by
codeflux; it holds no secrets (a key in it is refused: keys live in the OS credential store or the environment).

    [provider]
    name = "anthropic"                 # scripted | anthropic | openai | openai-compatible
    cheap_model = "claude-haiku-4-5"   # the ladder's cheap model (needed for a real provider)
    capable_model = "claude-sonnet-4-5"  # optional; default: the cheap one
    base_url = "http://127.0.0.1:4000/v1"  # needed by openai-compatible; for anthropic/openai a proxy speaking
                                       # their API (a non-default URL is still approved before its first call)

    [network]                          # provider calls only (nothing else codeflux does uses the network)
    proxy = "environment"              # "environment": HTTPS_PROXY/HTTP_PROXY and NO_PROXY; or "http://proxy:3128"
    ca_bundle = "/etc/ssl/corp-ca.pem" # PEM certificates trusted besides the usual ones (a TLS-inspecting proxy)

    [budget]
    default_hard_limit = "2.50 USD"    # the hard budget `codeflux run` sets on its task: an exact decimal and a
                                       # currency, in quotes (never a float)

    [ladder]                           # the model ladder (tier:effort rungs, cheapest first)
    rungs = ["cheap:low", "cheap:max", "capable:low", "capable:high"]  # add "capable:max" to use it (it asks first)
    stall_threshold = 3                # recurrences of one failure on a rung before the ladder climbs (1-10)

    [pipeline]                         # the pipeline's thresholds (codeflux.pipeline.thresholds), without "pipeline."
    "path-coverage.min-percent" = 85
    "atom-mutation.min-score" = 60

    [models."claude-haiku-4-5"]        # per model (the id the provider is called with)
    max_output_tokens = 4096           # the output bound its requests carry (clamped to its context window)

Without ``[network]`` a provider call goes straight to its endpoint: proxy variables are ignored (a prompt and a key
go only where the user approved). A proxy changes the route, not the destination: the endpoint approval still
names the provider's host. A proxy URL with a user or password is refused here (credentials do not belong in this
file; put them in ``HTTPS_PROXY`` and say ``proxy = "environment"``).

The ``[pipeline]`` keys and ranges are checked where the thresholds are known
(:func:`codeflux.coordinator.user_config.load_user_config`); here only their shape (a whole number per key).

Anything else — an unknown table or key, a value of the wrong type — is refused with the key's name, so a typo never
silently falls back to a default. Parsing is pure (:mod:`tomllib`); reading the file is the CLI's.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ladder import Ladder, Rung
from codeflux.domain.money import Currency, Money

__all__ = ["CONFIG_PROVIDERS", "MAX_OUTPUT_TOKENS_RANGE", "PROXY_FROM_ENVIRONMENT", "ConfiguredLadder",
           "ConfiguredModel", "ConfiguredNetwork", "ConfiguredProvider", "UserConfig", "parse_budget",
           "parse_user_config"]

CONFIG_PROVIDERS: Final = ("scripted", "anthropic", "openai", "openai-compatible")
_PROVIDER_KEYS: Final = frozenset({"name", "cheap_model", "capable_model", "base_url"})
_NETWORK_KEYS: Final = frozenset({"proxy", "ca_bundle"})
_BUDGET_KEYS: Final = frozenset({"default_hard_limit"})
_LADDER_KEYS: Final = frozenset({"rungs", "stall_threshold"})
_MODEL_KEYS: Final = frozenset({"max_output_tokens"})
_TABLES: Final = ("provider", "network", "budget", "ladder", "pipeline", "models")
MAX_OUTPUT_TOKENS_RANGE: Final = range(1, 10_000_001)
_BUDGET_CURRENCIES: Final = ("USD",)  # the currency of every price codeflux knows
PROXY_FROM_ENVIRONMENT: Final = "environment"
_SECRET_LOOKING: Final = ("key", "token", "secret", "password")
_MAX_TEXT: Final = 512


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfiguredProvider:
    """The ``[provider]`` table: which provider, and for a real one the ladder's models."""

    name: str
    cheap_model: str = ""
    capable_model: str = ""
    base_url: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfiguredNetwork:
    """The ``[network]`` table: ``proxy`` is empty (none), :data:`PROXY_FROM_ENVIRONMENT` or a proxy URL;
    ``ca_bundle`` an absolute path of a PEM file, or empty."""

    proxy: str = ""
    ca_bundle: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfiguredLadder:
    """The ``[ladder]`` table: the rungs (None: the built-in ladder) and the stall threshold (None: built-in)."""

    ladder: Ladder | None = None
    stall_threshold: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfiguredModel:
    """One ``[models."NAME"]`` table: the output bound of that model's requests (None: codeflux's own)."""

    max_output_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UserConfig:
    """What the config file sets (``provider`` None: it names none; ``network`` None: no ``[network]`` table;
    ``budget_default`` None: none; ``pipeline``: threshold key without ``pipeline.`` → value; ``models``: model
    id → its settings)."""

    provider: ConfiguredProvider | None = None
    network: ConfiguredNetwork | None = None
    budget_default: Money | None = None
    ladder: ConfiguredLadder = ConfiguredLadder()
    pipeline: Mapping[str, int] = field(default_factory=dict)
    models: Mapping[str, ConfiguredModel] = field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UserConfig):
            return NotImplemented
        return (self.provider, self.network, self.budget_default, self.ladder, dict(self.pipeline),
                dict(self.models)) == (other.provider, other.network, other.budget_default, other.ladder,
                                       dict(other.pipeline), dict(other.models))

    __hash__ = None  # type: ignore[assignment]


def _refuse(where: str, reason: str) -> InvalidValueError:
    return InvalidValueError(kind=f"setting {where}", reason=reason)


def _text(table: dict[str, object], key: str, *, where: str = "provider") -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        raise _refuse(f"[{where}] {key}", "must be a string in quotes")
    if len(value) > _MAX_TEXT or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise _refuse(f"[{where}] {key}", f"must be one line of at most {_MAX_TEXT} characters")
    return value.strip()


def _table(name: str, table: object, known: frozenset[str]) -> dict[str, object]:
    """``table`` when it is a table holding only ``known`` keys, else the refusal naming the key."""
    if not isinstance(table, dict):
        raise _refuse(f"[{name}]", f"must be a table ([{name}] on its own line, then key = value lines)")
    for key in table:
        if key in known:
            continue
        if any(word in key.lower() for word in _SECRET_LOOKING):
            raise _refuse(f"[{name}] {key}", "keys do not belong in the config file: use `codeflux provider set` or "
                          "the provider's environment variable (never stored)")
        if key not in known:
            raise _refuse(f"[{name}] {key}", f"not a setting codeflux knows (known: {', '.join(sorted(known))})")
    return table


def _proxy(value: str) -> str:
    if value in ("", PROXY_FROM_ENVIRONMENT):
        return value
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise _refuse("[network] proxy", "is not a URL (expected \"environment\" or e.g. \"http://proxy:3128\")"
                      ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _refuse("[network] proxy", "must be \"environment\" or an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise _refuse("[network] proxy", "holds a user or password: credentials do not belong in the config file; "
                      "put the URL in HTTPS_PROXY and say proxy = \"environment\"")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise _refuse("[network] proxy", "must be scheme://host[:port] only (no path, query or fragment)")
    return f"{parts.scheme}://{parts.hostname if ':' not in parts.hostname else f'[{parts.hostname}]'}" + (
        f":{port}" if port is not None else "")


def _network(table: object) -> ConfiguredNetwork:
    checked = _table("network", table, _NETWORK_KEYS)
    bundle = _text(checked, "ca_bundle", where="network")
    if bundle and not bundle.startswith("/"):
        raise _refuse("[network] ca_bundle", "must be an absolute path (it is read by the coordinator, whatever its "
                      "working directory)")
    return ConfiguredNetwork(proxy=_proxy(_text(checked, "proxy", where="network")), ca_bundle=bundle)


def _provider(table: object) -> ConfiguredProvider:
    table = _table("provider", table, _PROVIDER_KEYS)
    name = _text(table, "name")
    if name not in CONFIG_PROVIDERS:
        raise _refuse("[provider] name", f"must be one of {', '.join(CONFIG_PROVIDERS)}")
    provider = ConfiguredProvider(name=name, cheap_model=_text(table, "cheap_model"),
                                  capable_model=_text(table, "capable_model"), base_url=_text(table, "base_url"))
    if name == "scripted" and (provider.cheap_model or provider.capable_model or provider.base_url):
        raise _refuse("[provider]", "the scripted provider (not an AI model) takes no model and no base_url")
    if name != "scripted" and not provider.cheap_model:
        raise _refuse("[provider] cheap_model", f"{name} needs the ladder's cheap model")
    return provider


def _whole(value: object, where: str, allowed: range) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value not in allowed:
        raise _refuse(where, f"must be a whole number from {allowed.start} to {allowed.stop - 1} (no quotes)")
    return value


def parse_budget(text: str, *, where: str) -> Money:
    """``"2.50 USD"`` (an exact decimal, a space, the currency code) as money more than zero; refused naming
    ``where`` otherwise."""
    amount, _, code = text.strip().partition(" ")
    code = code.strip()
    if code not in _BUDGET_CURRENCIES:
        raise _refuse(where, f"write an amount and its currency, e.g. \"2.50 USD\" (currency: "
                      f"{', '.join(_BUDGET_CURRENCIES)}, the currency of codeflux's prices)")
    try:
        money = Money.parse_decimal(amount, currency=Currency.parse(code))
    except InvalidValueError as error:
        raise _refuse(where, error.reason) from None
    if money.minor <= 0:
        raise _refuse(where, "a hard limit must be more than zero")
    return money


def _budget(table: object) -> Money | None:
    checked = _table("budget", table, _BUDGET_KEYS)
    if "default_hard_limit" not in checked:
        return None
    value = checked["default_hard_limit"]
    if not isinstance(value, str):
        raise _refuse("[budget] default_hard_limit", "must be a string in quotes, e.g. \"2.50 USD\" (an exact "
                      "decimal: a float is refused)")
    return parse_budget(_text(checked, "default_hard_limit", where="budget"), where="[budget] default_hard_limit")


def _ladder(table: object) -> ConfiguredLadder:
    checked = _table("ladder", table, _LADDER_KEYS)
    ladder = None
    if "rungs" in checked:
        rungs = checked["rungs"]
        if not isinstance(rungs, list) or not all(isinstance(rung, str) for rung in rungs):
            raise _refuse("[ladder] rungs", 'must be a list of "tier:effort" strings, e.g. ["cheap:low", '
                          '"capable:high"]')
        try:
            ladder = Ladder(rungs=tuple(Rung.parse(str(rung)) for rung in rungs))
        except InvalidValueError as error:
            raise _refuse("[ladder] rungs", error.reason) from None
    threshold = None
    if "stall_threshold" in checked:
        threshold = _whole(checked["stall_threshold"], "[ladder] stall_threshold", range(1, 11))
    return ConfiguredLadder(ladder=ladder, stall_threshold=threshold)


def _pipeline(table: object) -> dict[str, int]:
    if not isinstance(table, dict):
        raise _refuse("[pipeline]", "must be a table ([pipeline] on its own line, then \"key\" = number lines)")
    return {str(key): _whole(value, f"[pipeline] {key}", range(0, 10_000_001)) for key, value in table.items()}


def _models(table: object) -> dict[str, ConfiguredModel]:
    if not isinstance(table, dict):
        raise _refuse("[models]", 'must hold one table per model: [models."MODEL-ID"]')
    models = {}
    for name, settings in table.items():
        if not name.strip() or len(name) > _MAX_TEXT or any(ord(c) < 0x21 or ord(c) == 0x7F for c in name):
            raise _refuse("[models]", "a model id must be one word of printable characters")
        checked = _table(f'models."{name}"', settings, _MODEL_KEYS)
        bound = None
        if "max_output_tokens" in checked:
            bound = _whole(checked["max_output_tokens"], f'[models."{name}"] max_output_tokens',
                           MAX_OUTPUT_TOKENS_RANGE)
        models[name] = ConfiguredModel(max_output_tokens=bound)
    return models


def parse_user_config(text: str) -> UserConfig:
    """The config file's settings, or :class:`InvalidValueError` naming the key (or TOML's own line and column)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _refuse("syntax", str(error)) from None
    for key in document:
        if key not in _TABLES:
            raise _refuse(key, f"not a setting codeflux knows (known tables: {', '.join(f'[{t}]' for t in _TABLES)})")
    return UserConfig(provider=_provider(document["provider"]) if "provider" in document else None,
                      network=_network(document["network"]) if "network" in document else None,
                      budget_default=_budget(document["budget"]) if "budget" in document else None,
                      ladder=_ladder(document["ladder"]) if "ladder" in document else ConfiguredLadder(),
                      pipeline=_pipeline(document.get("pipeline", {})), models=_models(document.get("models", {})))

