"""The reader of TOKIO-ABC summaries files: one row per benchmark run, the
model's view of each usable run, and the rows left out counted by reason.

Design notes: docs/internals.md (batio/twin/fstwin.py).
"""

from collections import Counter
import gzip
import logging

import numpy as np
import pandas as pd

from batio.errors import InputError
from batio.readings import LAST_DATE, MAX_BYTES, MAX_COUNT, column_numbers, in_order

log = logging.getLogger(__name__)

GIB = 2.0 ** 30
MIB = 2.0 ** 20
# The columns the twin reads (upstream names; UPSTREAM_summaries_README.md).
COLUMNS = ("_file_system", "darshan_app", "darshan_nprocs", "darshan_start_time", "darshan_end_time",
           "darshan_agg_perf_by_slowest_posix", "darshan_tot_bytes_read_posix",
           "darshan_tot_bytes_written_posix", "darshan_biggest_read_api_files", "darshan_biggest_write_api_files",
           "fs_tot_gibs_read", "fs_tot_gibs_written")
NUMERIC = COLUMNS[2:]
FULLNESS = "fshealth_ost_avg_full_pct"  # optional: OST fullness, only to measure what it explains
# (low, high, whole) of each numeric column: what a benchmark run on a real machine can record.
# Times are Unix seconds up to 2100; bandwidth in MiB/s up to an exabyte per second; traffic in GiB.
BOUNDS = {"darshan_nprocs": (1, MAX_COUNT, True), "darshan_agg_perf_by_slowest_posix": (0, MAX_BYTES / MIB, False),
          **dict.fromkeys(("darshan_start_time", "darshan_end_time"), (0, LAST_DATE.timestamp(), False)),
          **dict.fromkeys(("darshan_tot_bytes_read_posix", "darshan_tot_bytes_written_posix"), (0, MAX_BYTES, False)),
          **dict.fromkeys(("darshan_biggest_read_api_files", "darshan_biggest_write_api_files"), (0, MAX_COUNT, True)),
          **dict.fromkeys(("fs_tot_gibs_read", "fs_tot_gibs_written"), (0, MAX_BYTES / GIB, False)),
          FULLNESS: (0, 100, False)}
# The file system's traffic during the run, in GiB or, as in Mira's GPFS summaries, in bytes.
IN_BYTES = {"fs_tot_gibs_read": "fs_tot_bytes_read", "fs_tot_gibs_written": "fs_tot_bytes_written"}
# Why a row is not used, checked in this order; each skipped row is counted under one.
SKIPS = (("_file_system", "no file system (not a run on the file systems the traffic was measured on)"),
         ("darshan_agg_perf_by_slowest_posix", "no measured bandwidth"),
         ("fs_tot_gibs_read", "no file-system traffic measured during the run"),
         ("fs_tot_gibs_written", "no file-system traffic measured during the run"),
         ("darshan_start_time", "no start or end time"),
         ("darshan_end_time", "no start or end time"),
         ("darshan_nprocs", "no process count"))
# Counters that did not measure the run: nothing at all (21 % of Mira's runs), or less
# than the run's own Darshan bytes (the background would be negative).
ZERO = "file-system counters zero (traffic not measured)"
TOO_SMALL = "file-system counters below the run's own Darshan bytes (traffic not measured whole)"


def _open(path):
    try:
        with open(path, "rb") as probe:
            gzipped = probe.read(2) == b"\x1f\x8b"
    except FileNotFoundError:
        raise InputError(path, "no such summaries file") from None
    except IsADirectoryError:
        raise InputError(path, "is a folder, expected a summaries CSV (.csv or .csv.gz)") from None
    return gzip.open(path, "rt", newline="") if gzipped else open(path, newline="")


def read_runs(path):
    """(runs, skipped): one row per usable run, and Counter(reason -> rows left out).

    Malformed input (a missing column, a row with the wrong number of fields, a
    value that is not a number) stops with one line naming the file, the line
    and the column; rows that are well formed but unusable are counted.
    """
    try:
        with _open(path) as stream:
            raw = pd.read_csv(stream, dtype=str, keep_default_na=False)
    except pd.errors.ParserError as error:
        raise InputError(path, f"malformed CSV: {str(error).strip().splitlines()[-1]}") from None
    except (UnicodeDecodeError, EOFError, OSError) as error:
        raise InputError(path, f"unreadable ({error})") from None
    except pd.errors.EmptyDataError:
        raise InputError(path, "is empty (expected a header and one row per benchmark run)") from None
    frame = _numbers(path, raw, _sources(path, raw.columns))
    names = raw["_file_system"].str.strip()
    bad = (names != "") & ~names.str.fullmatch(r"[A-Za-z0-9_.-]+")
    if bad.any():  # the name becomes a host and a link id in the platform
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputError(f"{path}, line {row + 2}", f"a file system name may hold letters, digits and '_.-' "
                                                  f"only, got {names.iloc[row]!r}", field="_file_system")
    frame["_file_system"] = names.replace("", None).to_numpy()
    frame["app"] = raw["darshan_app"].str.strip().str.rsplit("/", n=1).str[-1].to_numpy()
    skipped: Counter[str] = Counter()
    keep = np.ones(len(frame), dtype=bool)
    for column, reason in SKIPS:
        lacking = keep & frame[column].isna().to_numpy()
        if lacking.any():
            skipped[reason] += int(lacking.sum())
        keep &= ~lacking
    counted = (frame["fs_tot_gibs_read"] + frame["fs_tot_gibs_written"]).to_numpy() * GIB
    own = (frame["darshan_tot_bytes_read_posix"].fillna(0.0) + frame["darshan_tot_bytes_written_posix"].fillna(0.0))
    for reason, unusable in (("measured bandwidth not positive", ~(frame["darshan_agg_perf_by_slowest_posix"] > 0)),
                             (ZERO, counted == 0), (TOO_SMALL, counted < own.to_numpy())):
        lacking = keep & np.asarray(unusable)
        if lacking.any():
            skipped[reason] += int(lacking.sum())
        keep &= ~lacking
    for reason, count in skipped.items():
        log.info("%s: %d rows skipped: %s", path, count, reason)
    return _runs(frame[keep]), skipped


def _sources(path, columns):
    """COLUMNS (and FULLNESS where present) -> the file's column that holds it."""
    sources = {column: column for column in COLUMNS}
    sources.update({gib: in_bytes for gib, in_bytes in IN_BYTES.items()
                    if gib not in columns and in_bytes in columns})
    if FULLNESS in columns:
        sources[FULLNESS] = FULLNESS
    missing = [column for column, source in sources.items() if source not in columns]
    if missing:
        nor = f" (nor {IN_BYTES[missing[0]]})" if missing[0] in IN_BYTES else ""
        raise InputError(path, f"missing column{nor} (has {len(columns)} others); see UPSTREAM_summaries_README.md",
                         field=missing[0])
    return sources


def _numbers(path, raw, sources):
    """The numeric columns of ``raw`` under their COLUMNS names, byte counters in GiB,
    beside each row's line; a value that is not a number in ASCII decimal digits, or not
    within what a run can record (BOUNDS), stops with one line naming its line and column."""
    frame = pd.DataFrame({"line": np.arange(len(raw)) + 2})  # line 1 is the header
    for column in [*NUMERIC, *([FULLNESS] if FULLNESS in sources else [])]:
        source = sources[column]
        low, high, whole = BOUNDS[column]
        scale = GIB if source != column else 1.0  # a traffic counter in bytes (Mira's)
        values = column_numbers(raw[source].to_numpy(), path, source, low=low, high=high * scale)
        fractional = np.isfinite(values) & (values != np.round(values))
        if whole and fractional.any():
            row = int(np.flatnonzero(fractional)[0])
            raise InputError(f"{path}, line {row + 2}", f"must be a whole number, got {raw[source].iloc[row]!r}",
                             field=source)
        frame[column] = values / scale
    ends = frame["darshan_end_time"].to_numpy()
    starts = frame["darshan_start_time"].to_numpy()
    before = ends < starts  # NaN compares False: a missing time is a skip, not an error
    if before.any():
        row = int(np.flatnonzero(before)[0])
        in_order(f"{path}, line {row + 2}", starts[row], ends[row], ("darshan_start_time", "darshan_end_time"))
    return frame


def _runs(frame):
    """The model's view of each run: clients, background and measured bandwidth in bytes/s."""
    read = frame["darshan_tot_bytes_read_posix"].fillna(0.0)
    written = frame["darshan_tot_bytes_written_posix"].fillna(0.0)
    direction = np.where(written > read, "write", "read")
    clients = frame["darshan_nprocs"].astype(int)
    # Darshan's times are whole seconds; a run is at least one second long.
    duration = (frame["darshan_end_time"] - frame["darshan_start_time"]).clip(lower=1.0)
    total = (frame["fs_tot_gibs_read"] + frame["fs_tot_gibs_written"]) * GIB
    background = (total - read - written).clip(lower=0.0) / duration
    # IOR runs both shared-file and file-per-process: the files of the run's direction tell them apart.
    files = np.where(direction == "write", frame["darshan_biggest_write_api_files"],
                     frame["darshan_biggest_read_api_files"])
    layout = np.where(files > 1, "fpp", "shared")
    config = (frame["app"] + "/" + layout + "/" + direction + "/" + clients.astype(str) + "/"
              + frame["_file_system"])
    return pd.DataFrame({
        "line": frame["line"], "start": pd.to_datetime(frame["darshan_start_time"], unit="s"),
        "file_system": frame["_file_system"], "app": frame["app"] + "/" + layout, "direction": direction,
        "config": config, "clients": clients, "background": background,
        "measured": frame["darshan_agg_perf_by_slowest_posix"] * MIB,
        "fullness": frame[FULLNESS] if FULLNESS in frame else np.nan}).reset_index(drop=True)
