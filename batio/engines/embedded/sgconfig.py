"""The SimGrid options (``--sg-cfg NAME:VALUE``) batio passes on, checked first.

SimGrid ends the process on an unknown option or model name (it prints its
help, or aborts), and takes nonsense such as a negative precision without a
word; so only the options below are passed, each with the values SimGrid
3.32 can use. ``host/model`` is batio's own (ptask_L07, for parallel tasks).
"""

import math

from batio.errors import InputError

BOOLEANS = ("yes", "no", "on", "off", "true", "false", "1", "0")


def _number(low, high, closed_low):
    def check(value):
        try:
            number = float(value) if value.isascii() else math.nan
        except ValueError:
            number = math.nan
        if not (low <= number if closed_low else low < number) or not number < high:
            return f"a number {'>=' if closed_low else '>'} {low:g}" + (f" and < {high:g}" if high < math.inf else
                                                                      ", finite")
        return None
    return check


def _integer(low):
    def check(value):
        if not (value.isascii() and value.lstrip("-").isdigit() and int(value) >= low):
            return f"a whole number >= {low}"
        return None
    return check


def _one_of(*values):
    def check(value):
        return None if value in values else f"one of {', '.join(values)}"
    return check


_PRECISION = _number(0, 1, closed_low=False)
_POSITIVE = _number(0, math.inf, closed_low=False)
_NON_NEGATIVE = _number(0, math.inf, closed_low=True)
_BOOLEAN = _one_of(*BOOLEANS)
OPTIONS = {
    "maxmin/precision": _PRECISION,
    "surf/precision": _PRECISION,
    "bmf/precision": _PRECISION,
    "maxmin/concurrency-limit": _integer(-1),
    "cpu/maxmin-selective-update": _BOOLEAN,
    "network/maxmin-selective-update": _BOOLEAN,
    "network/crosstraffic": _BOOLEAN,
    "network/model": _one_of("LV08", "CM02", "SMPI", "IB", "Constant"),
    "network/optim": _one_of("Lazy", "Full"),
    "cpu/optim": _one_of("Lazy", "Full"),
    "network/TCP-gamma": _NON_NEGATIVE,
    "network/bandwidth-factor": _POSITIVE,
    "network/latency-factor": _NON_NEGATIVE,
    "network/weight-S": _NON_NEGATIVE,
    "network/loopback-bw": _POSITIVE,
    "network/loopback-lat": _NON_NEGATIVE,
}


def check_sg_config(options):
    """Each ``NAME:VALUE`` of ``options``, or an InputError naming it and what is valid."""
    for option in options:
        name, sep, value = option.partition(":")
        if not sep or name not in OPTIONS:
            raise InputError("--sg-cfg", f"{option!r}: expected NAME:VALUE with NAME among {', '.join(OPTIONS)} "
                                         "(host/model is batio's own)")
        expected = OPTIONS[name](value)
        if expected:
            raise InputError("--sg-cfg", f"{option!r}: {name} must be {expected}, got {value!r}")
