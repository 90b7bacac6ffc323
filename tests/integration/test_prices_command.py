"""`codeflux prices list|set`: shipped defaults merged with user revisions, exact units, bad rates refused."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from pathlib import Path

import pytest

import codeflux
from codeflux.cli.main import main
from codeflux.coordinator.spending.prices import PriceCatalog
from codeflux.domain.money import USD
from codeflux.domain.pricing import Price, PriceComponent, TokenUsage
from codeflux.providers.price_data import SNAPSHOT_DATE, SOURCE_VERSION
from codeflux.store.database import Database
from codeflux.store.location import DataLocation
from codeflux.store.opening import open_store
from tests.fixtures.cli import run_codeflux

REPO_ROOT = Path(codeflux.__file__).resolve().parent.parent


def prices(capsys: pytest.CaptureFixture[str], location: DataLocation, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(location.directory), "prices", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def row_of(out: str, model: str) -> list[str]:
    return next(line.split() for line in out.splitlines() if line.split()[1:2] == [model])


def stored_revisions(location: DataLocation) -> list[tuple[str, str, int, str]]:
    db = open_store(location, create=False, migrate=False)
    try:
        return db.read(lambda view: [(str(r[0]), str(r[1]), int(r[2]), str(r[3])) for r in view.query_all(
            "SELECT provider, model, revision, source FROM price_snapshots ORDER BY id")])
    finally:
        db.close()


def test_list_without_a_database_shows_the_shipped_defaults_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], data_location: DataLocation
) -> None:
    code, out, err = prices(capsys, data_location, "list")

    assert code == 0, err
    assert out.splitlines()[0].split()[:4] == ["provider", "model", "input", "output"]
    assert row_of(out, "claude-sonnet-4-5") == ["anthropic", "claude-sonnet-4-5", "(claude-sonnet-4-5-20250929)",
                                               "3.00", "15.00", "0.30", "3.75", "6.00", "USD", SNAPSHOT_DATE,
                                               "shipped"]
    assert row_of(out, "gpt-5")[3:6] == ["1.25", "10.00", "0.125"]
    assert row_of(out, "gpt-5-codex")[2:5] == ["1.25", "10.00", "0.125"]
    assert out.splitlines()[-1] == (f"shipped rates: genai-prices {SOURCE_VERSION} (snapshot {SNAPSHOT_DATE}), "
                                    "generated from the package's data (codeflux/providers/price_data.py)")
    assert not data_location.directory.exists()


def test_set_records_a_user_revision_that_wins_over_the_shipped_default_in_exact_units(
    capsys: pytest.CaptureFixture[str], data_location: DataLocation
) -> None:
    code, out, err = prices(capsys, data_location, "set", "--provider", "anthropic", "--model", "claude-sonnet-4-5",
                            "--input", "2.5", "--output", "12.0000000001", "--cache-read", "0.25", "--currency",
                            "USD", "--effective-date", "2026-01-15")
    assert code == 0, err
    assert "revision 1 (user, effective 2026-01-15)" in out

    code, out, _ = prices(capsys, data_location, "list", "--provider", "anthropic")
    assert code == 0
    assert row_of(out, "claude-sonnet-4-5")[3:] == ["2.50", "12.0000000001", "0.25", "unknown", "unknown", "USD",
                                                    "2026-01-15", "user", "r1"]
    assert all(line.split()[0] in ("provider", "anthropic", "rates:", "shipped") for line in out.splitlines())

    db = open_store(data_location, create=False, migrate=False)
    try:
        row = db.read(lambda view: view.query_one(
            "SELECT input_num, input_den, output_num, output_den, cache_write_num FROM price_snapshots"))
    finally:
        db.close()
    # "2.5" per million dollars is 250 cents per million tokens: 1/4000 of a cent per token, exactly.
    assert row is not None and Fraction(row[0], row[1]) == Fraction(1, 4000)
    assert Fraction(row[2], row[3]) == Fraction(120_000_000_001, 10**10) * 100 / 10**6
    assert row[4] is None  # no cache-write rate given: unknown, not 0


def test_set_records_a_one_hour_cache_write_rate_exactly_and_list_shows_it(
    capsys: pytest.CaptureFixture[str], data_location: DataLocation
) -> None:
    code, out, err = prices(capsys, data_location, "set", "--provider", "anthropic", "--model", "claude-haiku-4-5",
                            "--input", "1", "--output", "5", "--cache-read", "0.1", "--cache-write", "1.25",
                            "--cache-write-1h", "2", "--currency", "USD")
    assert code == 0, err
    assert "cache-write 1.25, cache-write-1h 2.00 USD per million tokens" in out

    code, out, _ = prices(capsys, data_location, "list", "--provider", "anthropic")
    assert code == 0 and row_of(out, "claude-haiku-4-5")[3:9] == ["1.00", "5.00", "0.10", "1.25", "2.00", "USD"]
    db = open_store(data_location, create=False, migrate=False)
    try:
        row = db.read(lambda view: view.query_one(
            "SELECT cache_write_1h_num, cache_write_1h_den FROM price_snapshots WHERE model = 'claude-haiku-4-5'"))
    finally:
        db.close()
    assert row is not None and Fraction(row[0], row[1]) == Fraction(2, 10_000)  # $2 per million: 2/10000 ¢ a token

    code, _, err = prices(capsys, data_location, "set", "--provider", "anthropic", "--model", "claude-haiku-4-5",
                          "--input", "1", "--output", "5", "--cache-write-1h", "-2", "--currency", "USD")
    assert code == 2 and "--cache-write-1h cannot be negative" in err


@pytest.mark.parametrize(
    ("rate", "message"),
    [
        ("-1", "--input cannot be negative"),
        ("-0.5", "--input cannot be negative"),
        ("0.00000000001", "--input has more than 10 digits after the point"),
        ("1e-6", "--input must be a decimal"),
        ("3.", "--input must be a decimal"),
        ("three", "--input must be a decimal"),
        ("NaN", "--input must be a decimal"),
        ("12345678.0", "--input must be a decimal"),
    ],
)
def test_a_bad_rate_is_a_usage_error_and_nothing_is_recorded(
    capsys: pytest.CaptureFixture[str], data_location: DataLocation, rate: str, message: str
) -> None:
    code, _, err = prices(capsys, data_location, "set", "--provider", "openai", "--model", "gpt-5", "--input", rate,
                          "--output", "1.00", "--currency", "USD")

    assert code == 2
    assert message in err
    assert not data_location.database.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--provider", "acme"], "unknown provider 'acme'"),
        (["--currency", "XYZ"], "XYZ is not a currency codeflux knows"),
        (["--currency", "usd"], "three capital letters"),
        (["--effective-date", "15/01/2026"], "YYYY-MM-DD"),
        (["--model", "has space"], "--model must be"),
    ],
)
def test_other_bad_input_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], data_location: DataLocation, argv: list[str], message: str
) -> None:
    base = {"--provider": "openai", "--model": "gpt-5", "--input": "1.00", "--output": "2.00", "--currency": "USD"}
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        base[flag] = value
    code, _, err = prices(capsys, data_location, "set", *[part for pair in base.items() for part in pair])

    assert code == 2
    assert message in err


def test_a_second_set_is_the_next_revision_and_the_newest_one_is_in_force(db: Database) -> None:
    catalog = PriceCatalog(db)
    first = Price.from_per_million_tokens(currency=USD, input_per_million="1.00", output_per_million="2.00")
    second = Price.from_per_million_tokens(currency=USD, input_per_million="0", output_per_million="0",
                                           cache_read_per_million="0", cache_write_per_million="0")
    catalog.set_user_price(provider="openai-compatible", model="llama3", price=first,
                           effective_date=dt.date(2026, 1, 1))
    catalog.set_user_price(provider="openai-compatible", model="llama3", price=second,
                           effective_date=dt.date(2026, 2, 1))

    in_force = db.write(lambda tx: catalog.price_in_force(tx, provider="openai-compatible", model="llama3"))

    assert in_force is not None and in_force.revision == 2 and in_force.source == "user"
    free = TokenUsage(input_tokens=10**6, output_tokens=10**6, cache_read_tokens=0, cache_write_tokens=0)
    assert str(in_force.price.cost_of(free, model="llama3")) == "$0.00"  # a known zero price, not "unknown"
    assert db.write(lambda tx: catalog.price_in_force(tx, provider="openai-compatible", model="mistral")) is None


def test_a_shipped_default_is_recorded_once_when_first_used_and_an_alias_finds_it(db: Database) -> None:
    catalog = PriceCatalog(db)

    first = db.write(lambda tx: catalog.price_in_force(tx, provider="anthropic", model="claude-haiku-4-5-20251001"))
    again = db.write(lambda tx: catalog.price_in_force(tx, provider="anthropic", model="claude-haiku-4-5"))

    assert first is not None and again is not None and first.snapshot_id == again.snapshot_id
    assert (first.model, first.source, first.revision) == ("claude-haiku-4-5", "shipped", 1)
    # the recorded revision names the package, version and date the rate was generated from, then the page
    assert first.source_detail == (f"genai-prices {SOURCE_VERSION} (snapshot {SNAPSHOT_DATE}); "
                                   "https://www.anthropic.com/pricing#api")
    assert first.price.rate(PriceComponent.OUTPUT) == Fraction(5, 10_000)
    count = db.read(lambda view: view.query_one("SELECT count(*) FROM price_snapshots"))
    assert count == (1,)


def test_prices_end_to_end_as_a_separate_process(data_location: DataLocation) -> None:
    env = {"PYTHONPATH": str(REPO_ROOT)}
    recorded = run_codeflux("prices", "set", "--provider", "openai-compatible", "--model", "qwen2.5-coder",
                            "--input", "0", "--output", "0", "--cache-read", "0", "--cache-write", "0",
                            "--currency", "EUR", data_dir=data_location.directory, env=env)
    listed = run_codeflux("prices", "list", "--provider", "openai-compatible", data_dir=data_location.directory,
                          env=env)
    refused = run_codeflux("prices", "set", "--provider", "openai", "--model", "gpt-5", "--input", "-3",
                           "--output", "1", "--currency", "USD", data_dir=data_location.directory, env=env)

    assert recorded.code == 0, recorded.err
    assert listed.code == 0 and row_of(listed.out, "qwen2.5-coder")[2:8] == ["0.00", "0.00", "0.00", "0.00",
                                                                            "unknown", "EUR"]
    assert refused.code == 2 and "cannot be negative" in refused.err and refused.out == ""
    assert stored_revisions(data_location) == [("openai-compatible", "qwen2.5-coder", 1, "user")]
