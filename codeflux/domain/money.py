"""Exact money: currencies, integer amounts, unknown costs and ranges.

- :class:`Money` is an integer count of minor units (cents, pence; yen have none) plus a
  :class:`Currency`. ``+`` and ``-`` work only within one currency (:class:`CurrencyMismatchError`).
- Per-token prices and token usage live next door in :mod:`codeflux.domain.pricing`.
- A cost is :data:`Cost`: a known :class:`Money` or an :class:`UnknownCost` carrying its reasons.
  Anything combined with an unknown stays unknown and the reasons accumulate; an unknown is shown as
  ``unknown (no price for model X)``, never as 0. :class:`CostRange` renders ``$0.40 – $1.20``.

No float can enter: every constructor refuses ``float`` and ``bool`` with :class:`InexactNumberError`.

Rounding is explicit (:class:`Rounding`). A charge is rounded *up* to the minor unit, so a recorded
charge is never below what the exact rates give; half-up is for estimates shown to people. An amount
that does not fit a signed 64-bit integer (what SQLite stores) is refused, never wrapped or clipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Final, TypeAlias

from codeflux.domain.errors import CurrencyMismatchError, InexactNumberError, InvalidValueError

__all__ = [
    "EUR",
    "GBP",
    "JPY",
    "MAX_MINOR_UNITS",
    "USD",
    "Cost",
    "CostRange",
    "Currency",
    "Money",
    "Rounding",
    "UnknownCost",
    "refuse_inexact",
    "require_exact_fraction",
    "require_exact_int",
    "round_minor_units",
    "sum_costs",
]

MAX_MINOR_UNITS: Final = 2**63 - 1
"""Largest amount (in minor units, either sign) codeflux keeps: a signed 64-bit SQLite INTEGER."""

# ISO 4217 minor-unit exponents of the currencies codeflux knows; an unknown code is refused rather
# than guessed, since a wrong exponent misprices by a factor of 100.
_EXPONENTS: Final = {
    "USD": 2, "EUR": 2, "GBP": 2, "JPY": 0, "CHF": 2, "CAD": 2, "AUD": 2, "NZD": 2, "CNY": 2, "HKD": 2,
    "SGD": 2, "INR": 2, "SEK": 2, "NOK": 2, "DKK": 2, "PLN": 2, "BRL": 2, "MXN": 2, "ZAR": 2, "KRW": 0,
    "ISK": 0, "KWD": 3, "BHD": 3,
}  # fmt: skip
_SYMBOLS: Final = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}
_CURRENCY_OF_SYMBOL: Final = {symbol: code for code, symbol in _SYMBOLS.items()}
_CODE = re.compile(r"[A-Z]{3}")
_DECIMAL = re.compile(r"(?P<sign>-?)(?P<whole>\d{1,19})(?:\.(?P<fraction>\d{1,18}))?")
_FORMATTED = re.compile(
    r"(?P<sign>-?)(?:(?P<symbol>[$€£¥])(?P<digits>[\d,]+(?:\.\d+)?)|(?P<plain>[\d,]+(?:\.\d+)?) (?P<code>[A-Z]{3}))"
)
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})*|\d+")


def refuse_inexact(value: object, *, kind: str) -> None:
    """Raise :class:`InexactNumberError` if ``value`` is a float, a complex number or a bool."""
    if isinstance(value, bool):
        raise InexactNumberError(kind=kind, got="bool")
    if isinstance(value, float | complex):
        raise InexactNumberError(kind=kind, got=type(value).__name__)


def require_exact_int(value: object, *, kind: str) -> int:
    """``value`` if it is an ``int``; :class:`InexactNumberError` for a float or a bool, else
    :class:`InvalidValueError`."""
    refuse_inexact(value, kind=kind)
    if not isinstance(value, int):
        raise InvalidValueError(kind=kind, reason=f"must be an integer, not {type(value).__name__}")
    return value


def require_exact_fraction(value: object, *, kind: str) -> Fraction:
    """``value`` as a :class:`Fraction` if it is one or an ``int``; floats and bools are refused."""
    refuse_inexact(value, kind=kind)
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    raise InvalidValueError(kind=kind, reason=f"must be a Fraction or an integer, not {type(value).__name__}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Currency:
    """An ISO 4217 currency codeflux knows, with its minor-unit exponent (USD 2, JPY 0, KWD 3)."""

    code: str
    exponent: int

    def __post_init__(self) -> None:
        _check_code(self.code)
        exponent = require_exact_int(self.exponent, kind="currency exponent")
        if exponent != _EXPONENTS[self.code]:
            raise InvalidValueError(
                kind="currency", reason=f"{self.code} has {_EXPONENTS[self.code]} minor-unit digits, not {exponent}"
            )

    @classmethod
    def parse(cls, code: str) -> Currency:
        """The currency with ISO code ``code`` (``"USD"``), or :class:`InvalidValueError`. Every stored amount's
        currency is parsed, so each code's value is made once (a frozen value: sharing it changes nothing)."""
        if cls is Currency and type(code) is str and (made := _PARSED.get(code)) is not None:
            return made
        _check_code(code)
        currency = cls(code=code, exponent=_EXPONENTS[code])
        if cls is Currency:
            _PARSED[code] = currency
        return currency

    @property
    def minor_per_major(self) -> int:
        """Minor units in one major unit: 100 for USD, 1 for JPY."""
        return int(10**self.exponent)

    @property
    def symbol(self) -> str | None:
        return _SYMBOLS.get(self.code)

    def __str__(self) -> str:
        return self.code


_PARSED: Final[dict[str, Currency]] = {}


def _check_code(code: object) -> None:
    if not isinstance(code, str) or _CODE.fullmatch(code) is None:
        raise InvalidValueError(kind="currency", reason="an ISO 4217 code is three capital letters, such as USD")
    if code not in _EXPONENTS:
        raise InvalidValueError(kind="currency", reason=f"{code} is not a currency codeflux knows")


USD: Final = Currency(code="USD", exponent=2)
EUR: Final = Currency(code="EUR", exponent=2)
GBP: Final = Currency(code="GBP", exponent=2)
JPY: Final = Currency(code="JPY", exponent=0)


class Rounding(StrEnum):
    """How an exact fraction of a minor unit becomes a whole one."""

    UP = "up"  # towards +infinity: charges and reservations never fall below the exact amount
    HALF_UP = "half-up"  # to the nearest; a tie goes away from zero: estimates shown to people


def round_minor_units(exact: Fraction, rounding: Rounding) -> int:
    """``exact`` (a fraction of minor units) as a whole number of them, rounded as ``rounding`` says."""
    if rounding is Rounding.UP:
        return -((-exact.numerator) // exact.denominator)
    if rounding is Rounding.HALF_UP:
        magnitude = abs(exact) + Fraction(1, 2)
        whole = magnitude.numerator // magnitude.denominator
        return whole if exact >= 0 else -whole
    raise InvalidValueError(kind="rounding", reason=f"unknown rounding {rounding!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Money:
    """An exact amount: an integer number of ``currency`` minor units (``Money(minor=40, currency=USD)``
    is $0.40). Ordered and added only within one currency."""

    minor: int
    currency: Currency

    def __post_init__(self) -> None:
        minor = self.minor
        if type(minor) is int and -MAX_MINOR_UNITS <= minor <= MAX_MINOR_UNITS and type(self.currency) is Currency:
            return  # the common case, checked at once (a bool or an int subclass takes the full checks below)
        minor = require_exact_int(minor, kind="money")
        if abs(minor) > MAX_MINOR_UNITS:
            raise InvalidValueError(kind="money", reason="the amount is beyond what codeflux can store exactly")
        if not isinstance(self.currency, Currency):
            raise InvalidValueError(kind="money", reason="the currency must be a Currency")

    @classmethod
    def zero(cls, currency: Currency) -> Money:
        return cls(minor=0, currency=currency)

    @classmethod
    def parse_decimal(cls, text: str, *, currency: Currency) -> Money:
        """``"1.20"`` in ``currency`` as money; more fraction digits than the minor unit are refused."""
        refuse_inexact(text, kind="money")
        match = _DECIMAL.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidValueError(kind="money", reason="write an amount as digits with an optional '.' part")
        fraction = match["fraction"] or ""
        if len(fraction) > currency.exponent:
            raise InvalidValueError(
                kind="money", reason=f"{currency.code} has {currency.exponent} digits after the point"
            )
        minor = int(match["whole"]) * currency.minor_per_major + int(fraction.ljust(currency.exponent, "0") or "0")
        return cls(minor=-minor if match["sign"] else minor, currency=currency)

    @classmethod
    def parse(cls, text: str) -> Money:
        """The amount as :meth:`__str__` writes it (``"$1,234.56"``, ``"-€0.40"``, ``"12.50 CHF"``)."""
        match = _FORMATTED.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise InvalidValueError(kind="money", reason="write an amount like $1,234.56 or 12.50 CHF")
        code = _CURRENCY_OF_SYMBOL[match["symbol"]] if match["symbol"] else match["code"]
        digits = match["digits"] or match["plain"]
        whole, _, fraction = digits.partition(".")
        if _GROUPED.fullmatch(whole) is None:
            raise InvalidValueError(kind="money", reason="thousands separators must group three digits")
        plain = whole.replace(",", "") + (f".{fraction}" if fraction else "")
        return cls.parse_decimal(f"{match['sign']}{plain}", currency=Currency.parse(code))

    def _same_currency(self, other: Money, operation: str) -> None:
        if other.currency != self.currency:
            raise CurrencyMismatchError(operation=operation, left=self.currency.code, right=other.currency.code)

    def __add__(self, other: Money) -> Money:
        if not isinstance(other, Money):
            return NotImplemented
        self._same_currency(other, "add")
        return Money(minor=self.minor + other.minor, currency=self.currency)

    def __sub__(self, other: Money) -> Money:
        if not isinstance(other, Money):
            return NotImplemented
        self._same_currency(other, "subtract")
        return Money(minor=self.minor - other.minor, currency=self.currency)

    def __neg__(self) -> Money:
        return Money(minor=-self.minor, currency=self.currency)

    def __lt__(self, other: Money) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        self._same_currency(other, "compare")
        return self.minor < other.minor

    def __le__(self, other: Money) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        self._same_currency(other, "compare")
        return self.minor <= other.minor

    def __gt__(self, other: Money) -> bool:
        return other < self

    def __ge__(self, other: Money) -> bool:
        return other <= self

    def scale(self, factor: Fraction, *, rounding: Rounding) -> Money:
        """This amount times ``factor`` (exact), rounded to a whole minor unit as ``rounding`` says."""
        exact = Fraction(self.minor) * require_exact_fraction(factor, kind="scale factor")
        return Money(minor=round_minor_units(exact, rounding), currency=self.currency)

    @classmethod
    def from_exact_minor(cls, exact: Fraction, *, currency: Currency, rounding: Rounding) -> Money:
        """An exact fraction of minor units (a priced usage) rounded to money as ``rounding`` says."""
        return cls(minor=round_minor_units(require_exact_fraction(exact, kind="money"), rounding), currency=currency)

    def __str__(self) -> str:
        whole, fraction = divmod(abs(self.minor), self.currency.minor_per_major)
        digits = f"{whole:,}" + (f".{fraction:0{self.currency.exponent}d}" if self.currency.exponent else "")
        sign = "-" if self.minor < 0 else ""
        symbol = self.currency.symbol
        return f"{sign}{symbol}{digits}" if symbol else f"{sign}{digits} {self.currency.code}"


@dataclass(frozen=True, slots=True)
class UnknownCost:
    """A cost codeflux cannot know, with every reason why (``"no price for model X"``).

    Adding, subtracting or scaling an unknown gives an unknown whose reasons are the union, in order.
    """

    reasons: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.reasons, tuple) or not self.reasons:
            raise InvalidValueError(kind="unknown cost", reason="needs at least one reason")
        if not all(isinstance(reason, str) and reason.strip() for reason in self.reasons):
            raise InvalidValueError(kind="unknown cost", reason="each reason must be non-empty text")
        object.__setattr__(self, "reasons", tuple(dict.fromkeys(self.reasons)))

    @classmethod
    def because(cls, reason: str) -> UnknownCost:
        return cls((reason,))

    def __add__(self, other: Money | UnknownCost) -> UnknownCost:
        if isinstance(other, UnknownCost):
            return UnknownCost(self.reasons + other.reasons)
        if isinstance(other, Money):
            return self
        return NotImplemented

    def __radd__(self, other: Money | UnknownCost) -> UnknownCost:
        if isinstance(other, UnknownCost):
            return UnknownCost(other.reasons + self.reasons)
        if isinstance(other, Money):
            return self
        return NotImplemented

    __sub__ = __add__
    __rsub__ = __radd__

    def scale(self, factor: Fraction, *, rounding: Rounding) -> UnknownCost:
        require_exact_fraction(factor, kind="scale factor")
        return self

    def __str__(self) -> str:
        return f"unknown ({'; '.join(self.reasons)})"


Cost: TypeAlias = Money | UnknownCost
"""A known amount, or unknown with reasons. Never 0 standing in for "unknown"."""


def sum_costs(costs: Iterable[Cost], *, currency: Currency) -> Cost:
    """The total of ``costs`` (zero ``currency`` when there are none). Any unknown makes it unknown;
    amounts in another currency make it unknown too (there is no exchange rate here)."""
    total: Cost = Money.zero(currency)
    for cost in costs:
        if isinstance(cost, Money) and cost.currency != currency:
            total = total + UnknownCost.because(f"a cost in {cost.currency.code} cannot be added to {currency.code}")
        else:
            total = total + cost
    return total


@dataclass(frozen=True, slots=True, kw_only=True)
class CostRange:
    """An estimate from ``low`` to ``high``: ``$0.40 – $1.20``, or ``unknown (…)`` if either end is."""

    low: Cost
    high: Cost

    def __post_init__(self) -> None:
        if isinstance(self.low, Money) and isinstance(self.high, Money) and self.low > self.high:
            raise InvalidValueError(kind="cost range", reason="the low end is above the high end")

    @property
    def is_known(self) -> bool:
        return isinstance(self.low, Money) and isinstance(self.high, Money)

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the range is unknown (empty when it is known)."""
        reasons: list[str] = []
        for end in (self.low, self.high):
            if isinstance(end, UnknownCost):
                reasons.extend(reason for reason in end.reasons if reason not in reasons)
        return tuple(reasons)

    def __str__(self) -> str:
        if isinstance(self.low, Money) and isinstance(self.high, Money):
            return f"{self.low} – {self.high}"
        return str(UnknownCost(self.reasons))
