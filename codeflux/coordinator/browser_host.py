"""The browser UI's own host name, one per data directory (ARCHITECTURE §11, issue 13).

Browsers scope cookies by host, not by port: a session cookie set for ``127.0.0.1`` reaches every server
the person opens on ``127.0.0.1:<any port>`` — typically the dev server of the repository the agent is
changing. So the UI is served on a name no other local server uses: ``cf-<label>.localhost``, where the
label is 100 random bits kept in the ``settings`` table of this data directory's database. Chromium and
Firefox resolve every ``*.localhost`` name to loopback by themselves (RFC 6761), and a host-only cookie
set there goes back to that exact name only.

The label is the one thing another local server would need to lure the browser to
``cf-<label>.localhost:<its port>`` (cookies ignore the port), so it is never put in a page, an error or a
log; it lives in the 0600 database under the 0700 data directory, which no task's box can see.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import Final

from codeflux.domain.errors import StoredValueUnknownError
from codeflux.store.database import Database, Transaction
from codeflux.store.settings import put_setting, read_setting

__all__ = [
    "HOST_SUFFIX",
    "browser_host_name",
    "fresh_browser_host_name",
    "is_browser_host_name",
    "renew_browser_host_name",
]

SETTING_KEY: Final = "browser.host-label"
HOST_SUFFIX: Final = ".localhost"
_ALPHABET: Final = "abcdefghijklmnopqrstuvwxyz234567"  # base32: a DNS label needs no case to carry bits
_LABEL_LENGTH: Final = 20  # 100 bits
_HOST_NAME: Final = re.compile(rf"cf-[a-z2-7]{{{_LABEL_LENGTH}}}\.localhost")


def _new_label() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(_LABEL_LENGTH))


def _host_of(label: str) -> str:
    return f"cf-{label}{HOST_SUFFIX}"


def is_browser_host_name(name: str) -> bool:
    """Whether ``name`` has the shape of a UI host name (``cf-`` + 20 base32 letters + ``.localhost``)."""
    return _HOST_NAME.fullmatch(name) is not None


def fresh_browser_host_name() -> str:
    """A new UI host name kept nowhere (a server that has no data directory of its own, e.g. in tests)."""
    return _host_of(_new_label())


def browser_host_name(db: Database) -> str:
    """This data directory's UI host name, created (once, in one transaction) the first time it is asked for."""
    stored = db.read(lambda view: read_setting(view, SETTING_KEY))
    if stored is not None:
        return _stored_host(stored.value)
    label = _new_label()

    def create(tx: Transaction) -> str:
        current = read_setting(tx, SETTING_KEY)
        if current is not None:  # another process created it first: use that one
            return _stored_host(current.value)
        put_setting(tx, SETTING_KEY, {"label": label}, expected_revision=None)
        return _host_of(label)

    return db.write(create)


def renew_browser_host_name(db: Database) -> str:
    """Replace the label with a fresh one (``codeflux start --new-host-name``): cookies and links of the old
    name go nowhere afterwards. Returns the new host name."""
    label = _new_label()

    def renew(tx: Transaction) -> str:
        current = read_setting(tx, SETTING_KEY)
        put_setting(tx, SETTING_KEY, {"label": label},
                    expected_revision=None if current is None else current.revision)
        return _host_of(label)

    return db.write(renew)


def _stored_host(value: Mapping[str, object]) -> str:
    label = value.get("label")
    host = _host_of(label) if isinstance(label, str) else ""
    if not is_browser_host_name(host):
        raise StoredValueUnknownError(kind="browser host label", value=str(label)[:8])
    return host
