"""What the config file sets for runs, checked where the pipeline's thresholds and the models' windows are known.

:func:`configured_thresholds` turns the file's ``[pipeline]`` table into the threshold settings the pipeline reads
(:class:`~codeflux.pipeline.thresholds.StoredSettings` ranks them below a stored setting), refusing an unknown key
or a value out of its range with the file's path and the key. :func:`check_settings_in_force` is the ``doctor``
check that lists every default in force with its source (flag, environment, config file, built-in — doctor takes no
flags) and each model's configured output bound with its clamp to the model's context window (each request's
bound is also kept within what the window leaves after its estimated input: the gateway's clamp).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from codeflux.coordinator.doctor import CheckResult, CheckStatus
from codeflux.coordinator.user_config import config_path, configured_ladder, load_user_config, resolve_defaults
from codeflux.domain.errors import InvalidValueError
from codeflux.domain.providers import ProviderName
from codeflux.domain.user_config import UserConfig
from codeflux.pipeline.thresholds import THRESHOLDS
from codeflux.providers.capabilities import context_window_of
from codeflux.store.location import DataLocation

__all__ = ["check_settings_in_force", "configured_thresholds"]

_THRESHOLD_OF = {threshold.key.removeprefix("pipeline."): threshold for threshold in THRESHOLDS}


def configured_thresholds(config: UserConfig, environ: Mapping[str, str] = os.environ) -> dict[str, int]:
    """The file's ``[pipeline]`` thresholds by their full setting key (``pipeline.path-coverage.min-percent``);
    :class:`InvalidValueError` naming the file and the key for a key the pipeline does not read or a value out of
    its range."""
    chosen = {}
    for key, value in config.pipeline.items():
        threshold = _THRESHOLD_OF.get(key)
        where = f"config file {config_path(environ)}, setting [pipeline] {key}"
        if threshold is None:
            raise InvalidValueError(kind=where, reason="not a setting codeflux knows (known: "
                                                       f"{', '.join(sorted(_THRESHOLD_OF))})")
        if not threshold.minimum <= value <= threshold.maximum:
            raise InvalidValueError(kind=where, reason=f"must be a whole number from {threshold.minimum} to "
                                                       f"{threshold.maximum}")
        chosen[threshold.key] = value
    return chosen


def _in_force(config: UserConfig) -> str:
    defaults = resolve_defaults({}, os.environ, config)
    shown = [f"{name} {value.value or '(none)'} ({value.source})" for name, value in defaults.rows()
             if value.value or name in ("provider", "budget")]
    ladder, threshold = configured_ladder(config)
    from_file = "config file [ladder]" if config.ladder.ladder or config.ladder.stall_threshold else "built-in"
    shown.append(f"ladder {ladder}, stall threshold {threshold} ({from_file})")
    shown += [f"{key} {value} (config file [pipeline])" for key, value in sorted(config.pipeline.items())]
    provider = defaults.provider.value
    for model, settings in sorted(config.models.items()):
        if settings.max_output_tokens is None:
            continue
        bound = f"{model} max_output_tokens {settings.max_output_tokens:,}"
        if provider != "scripted":
            window = context_window_of(ProviderName(provider), model)
            if settings.max_output_tokens > window:
                bound += (f", clamped to {window:,} (its context window with {provider}): requests carry at most "
                          f"{window:,} less their estimated input")
        shown.append(bound + " (config file [models])")
    return "; ".join(shown)


def check_settings_in_force(_location: DataLocation) -> CheckResult:
    """``doctor``'s "settings in force": each value and where it came from; a bad environment value or an unknown
    ``[pipeline]`` key fails (``start`` and ``run`` would refuse it). An unreadable file is the config-file check's."""
    title = "settings in force"
    try:
        config = load_user_config(os.environ)
    except InvalidValueError:
        return CheckResult(id="settings-in-force", title=title, status=CheckStatus.UNKNOWN,
                           summary="the config file cannot be used (see \"config file\")",
                           remediation="fix the config file first")
    try:
        configured_thresholds(config)
        summary = _in_force(config)
    except InvalidValueError as error:
        return CheckResult(id="settings-in-force", title=title, status=CheckStatus.FAILED, summary=str(error),
                           remediation="fix the setting or environment variable it names (docs/using.md, "
                                       "\"Config file\")")
    return CheckResult(id="settings-in-force", title=title, status=CheckStatus.OK, summary=summary)
