"""Where the user's config file is and what it says (:mod:`codeflux.domain.user_config` parses it).

``$XDG_CONFIG_HOME/codeflux/config.toml`` (an absolute ``XDG_CONFIG_HOME`` only, as the XDG spec says), else
``~/.config/codeflux/config.toml``. No file is no setting; a file that cannot be read or parsed is refused with its
path, never skipped silently. ``codeflux doctor`` shows the path and what it found.

**Precedence**, highest first, for each value on its own: a command-line flag, the environment
(:data:`ENVIRONMENT_VARIABLES`: ``CODEFLUX_PROVIDER``, ``CODEFLUX_CHEAP_MODEL``, ``CODEFLUX_CAPABLE_MODEL``,
``CODEFLUX_BASE_URL``, ``CODEFLUX_BUDGET``), the config file, the built-in default. A model or base URL from the
environment or the file applies only to the provider it was given with (``CODEFLUX_PROVIDER``, the file's
``[provider] name``), never to another. :func:`resolve_defaults` says each effective value and where it came from
(``doctor`` shows them). ``codeflux start`` ranks the choice stored in Settings below a flag and the environment and
above the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.ladder import DEFAULT_LADDER, DEFAULT_STALL_THRESHOLD, Ladder
from codeflux.domain.money import Currency, Money
from codeflux.domain.user_config import CONFIG_PROVIDERS, UserConfig, parse_budget, parse_user_config

__all__ = ["BUILT_IN_BUDGET", "BUILT_IN_MODELS", "ENVIRONMENT_VARIABLES", "EffectiveDefaults", "EffectiveValue",
           "config_path", "configured_ladder", "load_user_config", "resolve_defaults"]

_MAX_BYTES = 64 * 1024
ENVIRONMENT_VARIABLES: Final = {"provider": "CODEFLUX_PROVIDER", "cheap_model": "CODEFLUX_CHEAP_MODEL",
                                "capable_model": "CODEFLUX_CAPABLE_MODEL", "base_url": "CODEFLUX_BASE_URL",
                                "budget": "CODEFLUX_BUDGET"}
"""The environment level, per value (between a flag and the config file)."""
_FLAGS: Final = {"provider": "--provider", "cheap_model": "--cheap-model", "capable_model": "--capable-model",
                 "base_url": "--base-url", "budget": "--budget"}
_CONFIG_KEYS: Final = {"provider": "[provider] name", "cheap_model": "[provider] cheap_model",
                       "capable_model": "[provider] capable_model", "base_url": "[provider] base_url",
                       "budget": "[budget] default_hard_limit"}
BUILT_IN_BUDGET: Final = Money(minor=100, currency=Currency.parse("USD"))
"""The hard budget `codeflux run` sets when nothing else says one."""
BUILT_IN_MODELS: Final = {"anthropic": ("claude-haiku-4-5", "claude-sonnet-4-5"), "openai": ("gpt-5-mini", "gpt-5")}
"""The cheap and capable models of a provider named with no model anywhere (no flag, variable or file names one):
`codeflux start --provider anthropic` works as typed. An openai-compatible server has no such default (its models
are the server's own); one model given and not the other keeps the single model for both (never a dearer one)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EffectiveValue:
    """A value in force (empty: none) and where it came from: ``flag --x``, ``environment CODEFLUX_X``,
    ``config file [table] key`` or ``built-in``."""

    value: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EffectiveDefaults:
    """The provider, its models and base URL, and the budget in force, each with its source."""

    provider: EffectiveValue
    cheap_model: EffectiveValue
    capable_model: EffectiveValue
    base_url: EffectiveValue
    budget: Money
    budget_source: str

    def rows(self) -> tuple[tuple[str, EffectiveValue], ...]:
        return (("provider", self.provider), ("cheap model", self.cheap_model),
                ("capable model", self.capable_model), ("base URL", self.base_url),
                ("budget", EffectiveValue(value=str(self.budget), source=self.budget_source)))


def config_path(environ: Mapping[str, str]) -> Path:
    configured = environ.get("XDG_CONFIG_HOME", "")
    base = Path(configured) if configured and Path(configured).is_absolute() else Path(
        environ.get("HOME") or Path.home()) / ".config"
    return base / "codeflux" / "config.toml"


def load_user_config(environ: Mapping[str, str]) -> UserConfig:
    """The settings of the config file (none when there is no file); :class:`InvalidValueError` naming the path
    when it cannot be read or says something codeflux does not accept."""
    path = config_path(environ)
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        return UserConfig()
    except OSError as error:
        raise InvalidValueError(kind=f"config file {path}", reason=f"cannot be read ({error.strerror})") from None
    if len(raw) > _MAX_BYTES:
        raise InvalidValueError(kind=f"config file {path}", reason=f"is larger than {_MAX_BYTES // 1024} KiB")
    try:
        config = parse_user_config(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidValueError(kind=f"config file {path}", reason="is not UTF-8") from None
    except InvalidValueError as error:
        raise InvalidValueError(kind=f"config file {path}, {error.kind}", reason=error.reason) from None
    return config


def configured_ladder(config: UserConfig) -> tuple[Ladder, int]:
    """The ladder and stall threshold in force: the file's ``[ladder]``, else the built-in ones."""
    return (config.ladder.ladder or DEFAULT_LADDER, config.ladder.stall_threshold or DEFAULT_STALL_THRESHOLD)


def _budget_of_text(text: str, *, where: str) -> Money:
    """``2.50`` (US dollars, as ``--budget`` takes it) or ``2.50 USD``."""
    return parse_budget(text if " " in text.strip() else f"{text.strip()} USD", where=where)


def resolve_defaults(flags: Mapping[str, str | None], environ: Mapping[str, str],
                     config: UserConfig | None = None) -> EffectiveDefaults:
    """Each value of :data:`ENVIRONMENT_VARIABLES` in force with its source (see the module docstring); a bad
    environment value is refused naming the variable. ``config``: the file's settings (None: read them)."""
    config = load_user_config(environ) if config is None else config
    provider = _pick("provider", flags, environ, config.provider.name if config.provider else "", "scripted")
    if provider.value not in CONFIG_PROVIDERS:
        raise InvalidValueError(kind=f"environment {ENVIRONMENT_VARIABLES['provider']}",
                                reason=f"must be one of {', '.join(CONFIG_PROVIDERS)}")
    env_applies = environ.get(ENVIRONMENT_VARIABLES["provider"], "").strip() in ("", provider.value)
    file_applies = config.provider is not None and config.provider.name == provider.value
    scripted = provider.value == "scripted"

    def model(name: str, configured: str) -> EffectiveValue:
        if scripted:
            return EffectiveValue(value="", source="built-in")
        return _pick(name, flags, environ if env_applies else {}, configured if file_applies else "", "")

    cheap = model("cheap_model", config.provider.cheap_model if config.provider else "")
    capable = model("capable_model", config.provider.capable_model if config.provider else "")
    if not cheap.value and not capable.value and provider.value in BUILT_IN_MODELS:
        built_in_cheap, built_in_capable = BUILT_IN_MODELS[provider.value]
        cheap = EffectiveValue(value=built_in_cheap, source="built-in")
        capable = EffectiveValue(value=built_in_capable, source="built-in")
    base_url = model("base_url", config.provider.base_url if config.provider else "")
    flag, env = flags.get("budget"), environ.get(ENVIRONMENT_VARIABLES["budget"], "").strip()
    if flag:
        budget, source = _budget_of_text(flag, where="--budget"), "flag --budget"
    elif env:
        budget = _budget_of_text(env, where=f"environment {ENVIRONMENT_VARIABLES['budget']}")
        source = f"environment {ENVIRONMENT_VARIABLES['budget']}"
    elif config.budget_default is not None:
        budget, source = config.budget_default, f"config file {_CONFIG_KEYS['budget']}"
    else:
        budget, source = BUILT_IN_BUDGET, "built-in"
    return EffectiveDefaults(provider=provider, cheap_model=cheap, capable_model=capable, base_url=base_url,
                             budget=budget, budget_source=source)


def _pick(name: str, flags: Mapping[str, str | None], environ: Mapping[str, str], configured: str,
          built_in: str) -> EffectiveValue:
    flag = (flags.get(name) or "").strip()
    if flag:
        return EffectiveValue(value=flag, source=f"flag {_FLAGS[name]}")
    env = environ.get(ENVIRONMENT_VARIABLES[name], "").strip()
    if env:
        if len(env) > 512 or any(ord(c) < 0x20 or ord(c) == 0x7F for c in env):
            raise InvalidValueError(kind=f"environment {ENVIRONMENT_VARIABLES[name]}",
                                    reason="must be one line of at most 512 characters")
        return EffectiveValue(value=env, source=f"environment {ENVIRONMENT_VARIABLES[name]}")
    if configured:
        return EffectiveValue(value=configured, source=f"config file {_CONFIG_KEYS[name]}")
    return EffectiveValue(value=built_in, source="built-in")
