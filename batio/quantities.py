"""Numbers with units, as platforms and options write them ('2.5Gf', '10GBps', '50us').

One reader for all of them: ASCII decimal digits only (no hexadecimal, no
NaN or infinity, no other script's digits, which C's strtod or Python's
float would take), finite once scaled, and within the bounds the caller
states, so that SimGrid is never handed a value it aborts on.
"""

from collections.abc import Callable
import math
import re
from typing import NoReturn

from batio.errors import InputError

NUMBER = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_QUANTITY = re.compile(rf"\s*({NUMBER})\s*([A-Za-z]*)\s*", re.ASCII)

# SimGrid 3.32's units (a bare number is in the base unit).
SPEED_UNITS = {"": 1.0, "f": 1.0, "flops": 1.0, "kf": 1e3, "Mf": 1e6, "Gf": 1e9, "Tf": 1e12, "Pf": 1e15,
               "Ef": 1e18, "Zf": 1e21, "Yf": 1e24}
BANDWIDTH_UNITS = {"": 1.0, "Bps": 1.0, "kBps": 1e3, "KBps": 1e3, "MBps": 1e6, "GBps": 1e9, "TBps": 1e12,
                   "PBps": 1e15, "KiBps": 2.0 ** 10, "MiBps": 2.0 ** 20, "GiBps": 2.0 ** 30, "TiBps": 2.0 ** 40,
                   "PiBps": 2.0 ** 50, "bps": 1 / 8, "kbps": 1e3 / 8, "Kbps": 1e3 / 8, "Mbps": 1e6 / 8,
                   "Gbps": 1e9 / 8, "Tbps": 1e12 / 8, "Kibps": 2.0 ** 10 / 8, "Mibps": 2.0 ** 20 / 8,
                   "Gibps": 2.0 ** 30 / 8, "Tibps": 2.0 ** 40 / 8}
MEMORY_UNITS = {"": 1.0, "B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2.0 ** 10,
                "MiB": 2.0 ** 20, "GiB": 2.0 ** 30, "TiB": 2.0 ** 40}
TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0, "h": 3600.0,
              "d": 86400.0, "w": 7 * 86400.0}

# Bounds of what a run can use. SimGrid aborted runs on speeds and
# bandwidths of 1e-300, and no machine is slower than MIN_RATE flop/s or
# byte/s (the sleep pstates of Batsim's energy platforms, 1e-9Mf, are
# exactly MIN_RATE); beyond MAX_RATE or MAX_LATENCY s, times lose their digits.
MIN_RATE, MAX_RATE = 1e-3, 1e30
MAX_LATENCY = 1e6
PLAIN = {"": 1.0}  # a bare number, no unit


def fails_with(source, prefix="", **where) -> Callable[[str], NoReturn]:
    """A function raising, for a problem, the InputError of ``source`` at ``where``."""
    def fail(problem: str) -> NoReturn:
        raise InputError(source, prefix + problem, **where)
    return fail


def decimal(text):
    """The float of a number in ASCII decimal digits ('-2.5e3'); ValueError for anything else."""
    if not re.fullmatch(rf"\s*{NUMBER}\s*", str(text), re.ASCII):
        raise ValueError(f"not a decimal number: {text!r}")
    return float(text)


def bound(value):
    """A bound for a message: short ('1e+10') unless that loses digits (2147483647, not 2.14748e+09)."""
    short = f"{value:g}"
    return short if float(short) == value or not float(value).is_integer() else str(int(value))


def _shown(text):
    """The value as written, cut short: a message stays one readable line."""
    text = str(text)
    return repr(text if len(text) <= 40 else text[:37] + "...")


def quantity(text, units, fail: Callable[[str], NoReturn], *, low=MIN_RATE, high=MAX_RATE, zero=False, what="value"):
    """The value of ``text`` in the base unit of ``units``, within [low, high] (or 0 if ``zero``).

    ``fail(problem)`` raises the caller's error."""
    match = _QUANTITY.fullmatch(str(text))
    named = [unit for unit in units if unit]
    known = f"{', '.join(named[:8])}{', ...' if len(named) > 8 else ''}"
    if match and match.group(2) not in units and named:
        fail(f"{what} {_shown(text)} has an unknown unit '{match.group(2)}' (known: {known})")
    if not match or match.group(2) not in units:
        fail(f"{what} {_shown(text)} is not a number in ASCII decimal digits"
             + (f" and an optional unit ({known})" if named else ""))
    value = float(match.group(1)) * units[match.group(2)]
    if not math.isfinite(value) or not (low <= value <= high or (zero and value == 0)):
        base = next((unit for unit, scale in units.items() if unit and scale == 1.0), "")
        fail(f"{what} {_shown(text)} is out of bounds: expected {'0 or ' if zero else ''}{bound(low)}{base} "
             f"to {bound(high)}{base}")
    return value


def is_whole(text):
    """Whether ``text`` is a whole number in ASCII digits (ASCII blanks around it aside), nothing else."""
    return re.fullmatch(r"\s*[0-9]{1,30}\s*", str(text), re.ASCII) is not None


def whole(text, fail, *, low, high, what="value"):
    """The integer ``text`` (ASCII digits, nothing else) within [low, high]."""
    text = str(text).strip()
    if not is_whole(text) or not low <= int(text) <= high:
        fail(f"{what} {_shown(text)} is not a whole number from {low} to {high} in ASCII digits")
    return int(text)
