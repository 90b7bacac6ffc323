"""Shared fixtures. Every test runs with a scrubbed environment: no provider keys, no proxies, a temp HOME."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store

# Hypothesis keeps its example database and constants under this directory; keep it inside the
# git-ignored .artifacts/ even when pytest is run directly rather than through cmd/codeflux-dev.
_HYPOTHESIS_DIR = Path(__file__).resolve().parents[1] / ".artifacts" / "hypothesis"
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(_HYPOTHESIS_DIR))

pytest_plugins = ["tests.fixtures.browser", "tests.fixtures.keyring_service", "tests.fixtures.provider_fixtures",
                  "tests.fixtures.service_runs"]

_SCRUBBED_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
_SCRUBBED_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
                   "all_proxy", "no_proxy", "CODEFLUX_HOME", "CODEFLUX_CONFINEMENT", "SSH_AUTH_SOCK")


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist without ``--basetemp`` (``cmd/codeflux-dev test`` passes a short one), run the
    workers under a short temporary root: each worker adds ``popen-gwN/`` to every tmp_path, and a coordinator's
    Unix socket under ``tmp_path`` must stay within sun_path (codeflux refuses paths over 100 bytes)."""
    if hasattr(config, "workerinput") or config.option.basetemp or not config.getoption("numprocesses", None):
        return
    root = tempfile.mkdtemp(prefix="cf-")
    config.option.basetemp = str(Path(root, "t"))
    config.add_cleanup(lambda: shutil.rmtree(root, ignore_errors=True))


_SECRET_SERVICE_FIXTURES = frozenset({"secret_service", "secret_service_lock"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that takes the real Secret Service (its fixture, or the run-wide lock of a test that reads it) is
    marked ``keyring`` whether or not its file says so: ``cmd/codeflux-dev test`` runs the ``keyring`` and ``browser``
    tests in one process after the rest ran on every core (docs/developing.md)."""
    for item in items:
        if _SECRET_SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.keyring)


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No keys, proxies or codeflux settings leak into a test from the developer's shell."""
    for name in list(os.environ):
        if name.endswith(_SCRUBBED_SUFFIXES) or name in _SCRUBBED_NAMES:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


@pytest.fixture
def data_location(tmp_path: Path) -> DataLocation:
    return DataLocation(directory=tmp_path / "data")


@pytest.fixture
def db(data_location: DataLocation) -> Iterator[Database]:
    """A fresh, migrated database file under the production connection policy."""
    database = open_store(data_location, create=True, migrate=True)
    try:
        yield database
    finally:
        database.close()
