"""One reading of a real machine's recorded numbers, dates, ids and labels, for every reader.

The importers (swf, sacct, jobsio), the TOKIO-ABC reader of ``twin`` and
``validate --benchmarks``, and ``validate``'s check of a workload's recorded
fields all read values here, so that each refuses the same things the same
way: digits other than ASCII decimal ones (Arabic-Indic, fullwidth, ``²``,
``1_000``, hexadecimal), NaN and infinities, and values no real machine can
have (1e308 bytes, a start in year 9999, 10^20 processes). A refusal is an
``InputError`` naming the file (and line), and the field.
"""

from datetime import UTC, datetime
import json
import math
import re

import numpy as np

from batio.errors import InputError, quoted
from batio.inputs.workload import check_name
from batio.quantities import NUMBER, PLAIN, bound, fails_with, quantity

# Trace times and durations are at most this many seconds (about 317 years):
# dates stay within what datetime represents, and times keep sub-second digits.
MAX_TRACE_SECONDS = 1e10
# Bytes a job or a benchmark run moves at most: an exabyte, a thousand times the
# largest file systems' capacity (bytes beyond lose the precision of a float's sum).
MAX_BYTES = 1e18
# Processes, ranks or files of one job: Batsim and MPI count them in a C int.
MAX_COUNT = 2 ** 31 - 1
# Dates a record can hold: from the Unix epoch (machines' clocks count from it)
# to 2100; a year 9999 is a corrupted cell, not a job.
FIRST_DATE, LAST_DATE = datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)
# A label (a week, a system name) becomes part of a file or folder name: at most this long.
MAX_LABEL = 100

_DECIMAL = re.compile(rf"\s*{NUMBER}\s*", re.ASCII)
_DIGITS = re.compile(r"[0-9]+", re.ASCII)


def trace_number(text, source, field, *, low=-MAX_TRACE_SECONDS, high=MAX_TRACE_SECONDS):
    """A number of a trace in ASCII decimal digits, within [low, high]."""
    return quantity(text, PLAIN, fails_with(source, field=field), low=low, high=high, what="value")


def is_decimal(text):
    """Whether ``text`` is a number in ASCII decimal digits (a bare number where a date is expected)."""
    return bool(_DECIMAL.fullmatch(str(text)))


def trace_date(text, source, field, example="2024-03-01T12:34:56"):
    """Seconds since 1970 of a date of a record ('2022-01-15 01:01:03', ISO 8601; local times
    read as UTC: only differences matter), in ASCII digits and between FIRST_DATE and LAST_DATE."""
    text = str(text).strip()
    try:
        if not text.isascii():
            raise ValueError(text)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(source, f"{quoted(text)} is not a date such as {example}",
                         field=field) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if not FIRST_DATE <= moment < LAST_DATE:
        raise InputError(source, f"{quoted(text)} is not a date a record can hold (from "
                                 f"{FIRST_DATE:%Y} to {LAST_DATE:%Y})", field=field)
    return moment.timestamp()


def in_order(source, earlier, later, fields):
    """Refuse a record whose ``later`` time (named ``fields[1]``) comes before ``earlier`` (``fields[0]``)."""
    if later < earlier:
        raise InputError(source, f"is {earlier - later:g} s before the {fields[0]} it follows", field=fields[1])


def trace_id(text, source, field):
    """A job id of a record: an int when it is ASCII digits ('007' and '7' are both 7, so that
    a reader sees them as one id), else the text. Refused: empty, a '!' (Batsim's workload
    separator), a comma, quote, line break or other control character (Batsim writes ids
    unquoted into its CSV), digits of other scripts (an Arabic-Indic '٧' is no job 7)."""
    text = str(text).strip()
    if _DIGITS.fullmatch(text):
        return int(text)
    if not text:
        raise InputError(source, "empty job id", field=field)
    if "!" in text:
        raise InputError(source, "a job id must not contain '!' (Batsim's workload separator)", field=field)
    check_name(source, text, "job id", field=field)
    if any(char.isnumeric() and not char.isascii() for char in text):
        raise InputError(source, f"job id {quoted(text)} has digits other than ASCII 0-9", field=field)
    if not text.isprintable():
        raise InputError(source, f"job id {quoted(text)} holds a control character", field=field)
    return text


def trace_label(text, source, field, what="name"):
    """A label from a record or an option (a week, a system name): it names outputs, so it
    is a plain name: printable, no path separator, not '.' or '..', at most MAX_LABEL
    characters. Refused otherwise, never rewritten (two weeks must not become one)."""
    text = str(text)
    if not text.strip():
        raise InputError(source, f"empty {what}", field=field)
    if (not text.isprintable() or any(char in text for char in "/\\:") or text.strip(".") == ""
            or text != text.strip() or len(text) > MAX_LABEL):
        raise InputError(source, f"{what} {quoted(text[:MAX_LABEL])} is not a plain name (printable, at most "
                                 f"{MAX_LABEL} characters, no '/', '\\' or ':', not '.' or '..'): it names "
                                 "the outputs", field=field)
    return text


def column_numbers(texts, source, field, *, low, high):
    """A float array of a column's cells (``texts``: strings), each in ASCII decimal digits within
    [low, high]; a blank cell is a missing value (NaN; a 'nan' is refused: no exporter writes it
    for a missing value). The first bad cell is refused naming its line (the header is line 1)."""
    values = np.full(len(texts), math.nan)
    for row, text in enumerate(texts):
        text = str(text).strip()
        if not text:
            continue
        values[row] = trace_number(text, f"{source}, line {row + 2}", field, low=low, high=high)
    return values


def json_number(value, source, field, *, low, high, job=None, whole=False):
    """A number of a JSON file batio reads back (a workload's recorded and measured fields):
    a finite number within [low, high] (a whole one if ``whole``); not a bool, a string or null."""
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or not low <= value <= high or (whole and not float(value).is_integer())):
        kind = "a whole number" if whole else "a number"
        raise InputError(source, f"must be {kind} from {bound(low)} to {bound(high)}, got {json_value(value)}",
                         job=job, field=field)
    return value


def json_value(value):
    """A JSON value as a message shows it, cut short."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
