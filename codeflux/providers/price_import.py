"""Render the shipped price snapshot (:mod:`codeflux.providers.price_data`) from a maintained price package.

Development only: ``cmd/codeflux-dev prices`` runs ``python -m codeflux.providers.price_import --as-of today``
and writes its output to ``codeflux/providers/price_data.py``; ``cmd/codeflux-dev generate-check`` renders it
again as of the committed snapshot date and fails when the file differs. The source is the release of
`genai-prices <https://github.com/pydantic/genai-prices>`_ (pydantic's maintained price data) pinned with its
hashes in ``requirements/dev.lock``; codeflux never imports it. Its ``genai_prices/data.py`` is read as *text*
from the installed distribution (located through its metadata, never executed) and walked as a Python syntax
tree, so every rate is the decimal text the package wrote — ``Decimal('1.25')`` gives ``"1.25"`` — and a rate
written any other way (a float literal, ``Decimal(0.1)``, an exponent, a negative number) is refused with
:class:`~codeflux.domain.errors.InexactNumberError` or :class:`~codeflux.domain.errors.InvalidValueError`.

What is taken, for every model of the capability table (:data:`codeflux.providers.capabilities.MODEL_CAPABILITIES`,
codeflux's ids and their dated aliases), from the source's ``anthropic`` and ``openai`` providers:

* the model the source matches the id to (its own match clauses: equals, starts-with, regex, …); every dated
  alias must match the same source model, and a model the source does not know fails the rendering;
* the standard rates in force on the snapshot date: of a list of dated prices, the last one started by then
  (its start date becomes the rate's effective date); price variants (batch, flex, priority) are not taken;
* input, output, cache read and cache write per million tokens; a tiered rate gives its base rate only when every
  tier starts at or beyond the model's context window in codeflux's table (so the base rate is the only one a
  call can be billed at), otherwise the rendering fails rather than under-price long prompts.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import importlib.metadata
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from codeflux.domain.errors import InexactNumberError, InvalidValueError
from codeflux.domain.providers import ProviderName
from codeflux.providers.capabilities import MODEL_CAPABILITIES, ModelCapabilities

__all__ = ["SOURCE_DISTRIBUTION", "ModelRates", "main", "read_source", "render_price_data", "select_rates"]

SOURCE_DISTRIBUTION = "genai-prices"
SOURCE_DATA_FILE = "genai_prices/data.py"
SOURCE_URL = "https://github.com/pydantic/genai-prices"
_PROVIDERS = {ProviderName.ANTHROPIC: "anthropic", ProviderName.OPENAI: "openai"}
_RATE_FIELDS = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok")
_DECIMAL_TEXT = re.compile(r"\d{1,12}(?:\.\d{1,12})?")
_KIND = "genai-prices data"


@dataclass(frozen=True, slots=True)
class _Call:
    """A constructor call of the data file (``ModelInfo(...)``), its arguments evaluated."""

    name: str
    kwargs: dict[str, object] = field(default_factory=dict)
    args: tuple[object, ...] = ()


@dataclass(frozen=True, slots=True)
class _Inexact:
    """A number written without an exact decimal text (a float literal, ``Decimal(0.1)``): refused where a
    rate is read, ignored elsewhere."""

    text: str
    got: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRates:
    """One model's standard rates (USD per million tokens, the source's decimal texts; None: not given)."""

    provider: ProviderName
    model: str
    source_model: str
    effective_date: dt.date | None
    input: str
    output: str
    cache_read: str | None
    cache_write: str | None
    cache_write_1h: str | None = None


# ------------------------------------------------------------------------------------------- reading the text


def _evaluate(node: ast.expr) -> object:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, float):
            return _Inexact(text=ast.unparse(node), got="float")
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _evaluate(node.operand)
        if isinstance(value, int) and not isinstance(value, bool):
            return -value
        return _Inexact(text=ast.unparse(node), got="negative number")
    if isinstance(node, ast.List | ast.Tuple):
        return [_evaluate(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        return {_evaluate(k) if k is not None else None: _evaluate(v) for k, v in zip(node.keys, node.values,
                                                                                      strict=True)}
    if isinstance(node, ast.Call):
        return _call(node)
    if isinstance(node, ast.Name | ast.Attribute):  # a constant such as datetime.UTC: kept as its name
        return _Call(name=ast.unparse(node))
    raise InvalidValueError(kind=_KIND, reason=f"line {node.lineno}: unexpected {type(node).__name__}")


def _call(node: ast.Call) -> object:
    name = ast.unparse(node.func)
    if name == "Decimal":
        return _decimal(node)
    if name == "datetime.date":
        parts = [_evaluate(arg) for arg in node.args]
        numbers = [part for part in parts if isinstance(part, int) and not isinstance(part, bool)]
        if len(numbers) != 3 or len(parts) != 3 or node.keywords:
            raise InvalidValueError(kind=_KIND, reason=f"line {node.lineno}: a date that is not three integers")
        return dt.date(*numbers)
    kwargs = {kw.arg: _evaluate(kw.value) for kw in node.keywords if kw.arg is not None}
    return _Call(name=name, kwargs=kwargs, args=tuple(_evaluate(arg) for arg in node.args))


def _decimal(node: ast.Call) -> Decimal | _Inexact:
    """``Decimal('1.25')`` → Decimal from that very text; anything else is not an exact rate."""
    if len(node.args) != 1 or node.keywords:
        raise InvalidValueError(kind=_KIND, reason=f"line {node.lineno}: Decimal() with other than one argument")
    argument = node.args[0]
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        if _DECIMAL_TEXT.fullmatch(argument.value) is None:
            return _Inexact(text=argument.value, got=f"decimal text {argument.value!r}")
        return Decimal(argument.value)
    got = "float" if isinstance(argument, ast.Constant) and isinstance(argument.value, float) else "non-text value"
    return _Inexact(text=ast.unparse(argument), got=got)


def read_source(text: str) -> list[_Call]:
    """The ``providers`` list of a genai-prices ``data.py`` text, each call's arguments evaluated (never run)."""
    for statement in ast.parse(text).body:
        target = statement.target if isinstance(statement, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "providers" and isinstance(statement, ast.AnnAssign):
            if statement.value is None:
                break
            providers = _evaluate(statement.value)
            if isinstance(providers, list) and all(isinstance(p, _Call) for p in providers):
                return providers
            break
    raise InvalidValueError(kind=_KIND, reason="no `providers: list[Provider] = [...]` assignment")


# ---------------------------------------------------------------------------------------------- selection


def _matches(clause: object, model: str) -> bool:
    if not isinstance(clause, _Call):
        raise InvalidValueError(kind=_KIND, reason=f"a match clause that is not a clause: {clause!r}")
    values = clause.kwargs
    match clause.name:
        case "ClauseEquals":
            return model == values["equals"]
        case "ClauseStartsWith":
            return model.startswith(str(values["starts_with"]))
        case "ClauseEndsWith":
            return model.endswith(str(values["ends_with"]))
        case "ClauseContains":
            return str(values["contains"]) in model
        case "ClauseRegex":
            return re.search(str(values["regex"]), model) is not None
        case "ClauseOr":
            return any(_matches(part, model) for part in _list(values["or_"]))
        case "ClauseAnd":
            return all(_matches(part, model) for part in _list(values["and_"]))
    raise InvalidValueError(kind=_KIND, reason=f"unknown match clause {clause.name}")


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise InvalidValueError(kind=_KIND, reason=f"expected a list, got {type(value).__name__}")
    return value


def _source_model(models: Sequence[_Call], model: str) -> _Call | None:
    """The source's model for ``model``: the one with that id, else the first whose match clause takes it (the
    package's own order)."""
    lowered = model.lower()
    by_id = next((info for info in models if info.kwargs.get("id") == lowered), None)
    return by_id or next((info for info in models if _matches(info.kwargs.get("match"), lowered)), None)


def _prices_in_force(info: _Call, as_of: dt.date) -> tuple[_Call, dt.date | None]:
    prices = info.kwargs.get("prices")
    if isinstance(prices, _Call) and prices.name == "ModelPrice":
        return prices, None
    chosen: tuple[_Call, dt.date | None] | None = None
    for conditional in _list(prices):
        if not isinstance(conditional, _Call) or conditional.name != "ConditionalPrice":
            raise InvalidValueError(kind=_KIND, reason=f"{info.kwargs['id']}: prices that are not ModelPrice")
        constraint = conditional.kwargs.get("constraint")
        start: dt.date | None = None
        if isinstance(constraint, _Call):
            if constraint.name != "StartDateConstraint":
                raise InvalidValueError(kind=_KIND, reason=f"{info.kwargs['id']}: {constraint.name} is not taken")
            given = constraint.kwargs.get("start_date")
            if not isinstance(given, dt.date):
                raise InvalidValueError(kind=_KIND, reason=f"{info.kwargs['id']}: a start date that is not a date")
            start = given
        if start is None or start <= as_of:
            model_price = conditional.kwargs["prices"]
            if not isinstance(model_price, _Call):
                raise InvalidValueError(kind=_KIND, reason=f"{info.kwargs['id']}: a conditional price without rates")
            chosen = (model_price, start)
    if chosen is None:
        raise InvalidValueError(kind=_KIND, reason=f"{info.kwargs['id']}: no price in force on {as_of}")
    return chosen


def _rate_text(value: object, *, where: str, context_window: int) -> str | None:
    if value is None:
        return None
    if isinstance(value, _Call) and value.name == "TieredPrices":
        for tier in _list(value.kwargs.get("tiers", [])):
            start = tier.kwargs.get("start") if isinstance(tier, _Call) else None
            if not isinstance(start, int) or start < context_window:
                raise InvalidValueError(kind=_KIND, reason=(
                    f"{where}: a tier starts at {start} tokens, inside the {context_window}-token context window "
                    "codeflux counts for the model; its base rate alone would under-price long prompts"))
        value = value.kwargs.get("base")
    if isinstance(value, _Inexact):
        raise InexactNumberError(kind=f"{_KIND} rate {where} ({value.text})", got=value.got)
    if not isinstance(value, Decimal):
        raise InvalidValueError(kind=_KIND, reason=f"{where}: a rate that is not a Decimal")
    return format(value, "f")


def select_rates(providers: Sequence[_Call], *, as_of: dt.date,
                 known: Sequence[ModelCapabilities] = MODEL_CAPABILITIES) -> list[ModelRates]:
    """The rates of every ``known`` model of a provider the source covers, in the table's order."""
    by_id = {p.kwargs.get("id"): p for p in providers}
    selected: list[ModelRates] = []
    for row in known:
        source_provider = by_id.get(_PROVIDERS.get(row.provider))
        if source_provider is None:
            raise InvalidValueError(kind=_KIND, reason=f"no provider {_PROVIDERS.get(row.provider)!r}")
        models = [m for m in _list(source_provider.kwargs.get("models", [])) if isinstance(m, _Call)]
        info = _source_model(models, row.model)
        if info is None:
            raise InvalidValueError(kind=_KIND, reason=f"no price for {row.provider.value} model {row.model}")
        for alias in row.aliases:
            if _source_model(models, alias) is not info:
                raise InvalidValueError(kind=_KIND, reason=(
                    f"{row.model}'s alias {alias} is not priced as {info.kwargs['id']} by the source"))
        model_price, start = _prices_in_force(info, as_of)
        where = f"{row.provider.value}/{info.kwargs['id']}"

        def rate(name: str, where: str = where, model_price: _Call = model_price, row: ModelCapabilities = row
                 ) -> str | None:
            return _rate_text(model_price.kwargs.get(name), where=f"{where} {name}", context_window=row.context_window)

        input_, output, cache_read, cache_write, cache_write_1h = (rate(name) for name in _RATE_FIELDS)
        if input_ is None or output is None:
            raise InvalidValueError(kind=_KIND, reason=f"{where}: no input or output rate")
        selected.append(ModelRates(provider=row.provider, model=row.model, source_model=str(info.kwargs["id"]),
                                   effective_date=start, input=input_, output=output, cache_read=cache_read,
                                   cache_write=cache_write, cache_write_1h=cache_write_1h))
    return selected


def pricing_pages(providers: Sequence[_Call]) -> dict[ProviderName, str]:
    """Each covered provider's first pricing page as the source records it."""
    pages: dict[ProviderName, str] = {}
    for name, source_id in _PROVIDERS.items():
        provider = next((p for p in providers if p.kwargs.get("id") == source_id), None)
        urls = [] if provider is None else provider.kwargs.get("pricing_urls") or []
        pages[name] = str(_list(urls)[0]) if urls else SOURCE_URL
    return pages


# ----------------------------------------------------------------------------------------------- rendering


def _literal(value: str | None) -> str:
    if value is None:
        return "None"
    if '"' in value or "\\" in value or not value.isprintable():
        raise InvalidValueError(kind=_KIND, reason=f"a text codeflux will not copy into source: {value!r}")
    return f'"{value}"'


def _row(rates: ModelRates) -> str:
    effective = None if rates.effective_date is None else rates.effective_date.isoformat()
    values = (rates.provider.value, rates.model, rates.source_model, effective, rates.input, rates.output,
              rates.cache_read, rates.cache_write, rates.cache_write_1h)
    return f"    ({', '.join(_literal(value) for value in values)}),\n"


def render_price_data(rates: Sequence[ModelRates], *, version: str, as_of: dt.date,
                      pages: dict[ProviderName, str]) -> str:
    """The text of ``codeflux/providers/price_data.py``."""
    rows = "".join(_row(r) for r in rates)
    page_lines = "".join(f"    {_literal(name.value)}: {_literal(url)},\n" for name, url in pages.items())
    source = f"{SOURCE_DISTRIBUTION} {version}"
    return f'''"""The shipped price snapshot, generated by `cmd/codeflux-dev prices` from {source}. Do not edit.

Regenerate it with `cmd/codeflux-dev prices` after a lock change of the source package; `cmd/codeflux-dev
generate-check` fails when this file differs from what the locked release produces (what is taken:
codeflux/providers/price_import.py). Rates: USD per million tokens as the source's decimal texts, standard tier;
None: the source gives no rate.
"""

from __future__ import annotations

from typing import Final

SOURCE: Final = {_literal(SOURCE_DISTRIBUTION)}
SOURCE_VERSION: Final = {_literal(version)}
SNAPSHOT_DATE: Final = {_literal(as_of.isoformat())}
"""The day the rates were taken: dated prices are chosen as of it; the effective date of every undated rate."""
SOURCE_URL: Final = {_literal(SOURCE_URL)}
PRICING_PAGES: Final = {{
{page_lines}}}

# provider, model, the source's model, effective date (None: SNAPSHOT_DATE), input, output, cache read, cache write
# (the default, 5-minute writes), 1-hour cache write
RATES: Final[tuple[tuple[str, str, str, str | None, str, str, str | None, str | None, str | None], ...]] = (
{rows})
'''


def installed_source() -> tuple[str, str]:
    """The installed release's version and the text of its data file (read, never imported)."""
    distribution = importlib.metadata.distribution(SOURCE_DISTRIBUTION)
    data = Path(str(distribution.locate_file(SOURCE_DATA_FILE)))
    return distribution.version, data.read_text(encoding="utf-8")


def _committed_date() -> dt.date:
    from codeflux.providers import price_data  # noqa: PLC0415 - the file being checked, read only on request

    return dt.date.fromisoformat(price_data.SNAPSHOT_DATE)


def main(argv: Sequence[str] | None = None, *, today: Callable[[], dt.date] | None = None) -> int:
    """Print the price data module for the installed release, as of ``--as-of`` (``today``, UTC; ``committed``:
    the committed file's snapshot date; or YYYY-MM-DD)."""
    parser = argparse.ArgumentParser(prog="python -m codeflux.providers.price_import", description=__doc__)
    parser.add_argument("--as-of", default="committed", metavar="today|committed|YYYY-MM-DD")
    args = parser.parse_args(argv)
    if args.as_of == "today":
        as_of = (today or (lambda: dt.datetime.now(dt.UTC).date()))()
    elif args.as_of == "committed":
        as_of = _committed_date()
    else:
        as_of = dt.date.fromisoformat(args.as_of)
    version, text = installed_source()
    providers = read_source(text)
    rendered = render_price_data(select_rates(providers, as_of=as_of), version=version, as_of=as_of,
                                 pages=pricing_pages(providers))
    sys.stdout.write(rendered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
