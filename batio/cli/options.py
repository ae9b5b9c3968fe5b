"""Numeric options, read by batio rather than by argparse's ``int`` and ``float``: a bad value
is one line naming the option (argparse would print its usage block first), in ASCII decimal
digits (no NaN, infinity, or ``1e18`` for a count), and within the bounds the option states.
Options whose own check says more (``--workers``, ``--port``...) are only parsed here."""

from batio.errors import InputError, quoted
from batio.quantities import PLAIN, fails_with, is_whole, quantity

# Finite: the option's own check says which values a run can use.
ANY_NUMBER = 1e300


def count(option, low=0, high=None):
    """argparse's ``type`` for a whole-number option, at least ``low`` and at most ``high`` (None: any)."""
    def parse(text):
        if not is_whole(text):
            raise InputError(option, f"expected a whole number in ASCII digits, got {quoted(text)}")
        value = int(text)
        if value < low or high is not None and value > high:
            raise InputError(option, f"must be from {low} to {high}, got {value}" if high is not None else
                                     f"must be at least {low}, got {value}")
        return value
    return parse


def number(option, low=-ANY_NUMBER, high=ANY_NUMBER):
    """argparse's ``type`` for a number option (ASCII decimal digits, finite) within [low, high]."""
    def parse(text):
        return quantity(text, PLAIN, fails_with(option), low=low, high=high, what="value")
    return parse
