"""Where the user's config file is and what it says (:mod:`codeflux.domain.user_config` parses it).

``$XDG_CONFIG_HOME/codeflux/config.toml`` (an absolute ``XDG_CONFIG_HOME`` only, as the XDG spec says), else
``~/.config/codeflux/config.toml``. No file is no setting; a file that cannot be read or parsed is refused with its
path, never skipped silently. ``codeflux doctor`` shows the path and what it found.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from codeflux.domain.errors import InvalidValueError
from codeflux.domain.user_config import UserConfig, parse_user_config

__all__ = ["config_path", "load_user_config"]

_MAX_BYTES = 64 * 1024


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
        return parse_user_config(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidValueError(kind=f"config file {path}", reason="is not UTF-8") from None
    except InvalidValueError as error:
        raise InvalidValueError(kind=f"config file {path}, {error.kind}", reason=error.reason) from None
