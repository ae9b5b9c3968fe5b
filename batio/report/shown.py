"""How reports show metrics, their intervals and their paired differences (report.md, report.html, console)."""

import math

# metric -> (heading, how a value is shown)
SHOWN = {
    "makespan": ("makespan (s)", "{:.1f}"),
    "mean_wait": ("mean wait (s)", "{:.1f}"),
    "max_wait": ("max wait (s)", "{:.1f}"),
    "mean_slowdown": ("mean slowdown", "{:.3f}"),
    "max_slowdown": ("max slowdown", "{:.3f}"),
    "mean_bounded_slowdown": ("mean bounded slowdown", "{:.3f}"),
    "max_bounded_slowdown": ("max bounded slowdown", "{:.3f}"),
    "utilisation": ("utilisation", "{:.1%}"),
    "bytes_moved": ("bytes moved (GB)", "{:.2f}"),
    "mean_io_slowdown": ("mean I/O slowdown", "{:.3f}"),
    "max_io_slowdown": ("max I/O slowdown", "{:.3f}"),
}
SCALE = {"bytes_moved": 1e-9}
# The metrics whose paired differences get a verdict, and those where higher is better.
JUDGED = ("makespan", "mean_wait", "mean_slowdown", "mean_bounded_slowdown", "utilisation", "mean_io_slowdown")
HIGHER_IS_BETTER = {"utilisation", "succeeded"}
DEGRADED = "DEGRADED"


def _missing(value):
    return value is None or (isinstance(value, float) and math.isnan(value))


def shown_value(metric, value):
    """A metric's value as tables show it ("-" when unknown)."""
    if _missing(value):
        return "-"
    return SHOWN[metric][1].format(value * SCALE.get(metric, 1))


def shown_interval(metric, mean, half_width):
    """``mean ± half-width`` as tables show the metric (the mean alone without an interval)."""
    cell = shown_value(metric, mean)
    if cell != "-" and not _missing(half_width):
        cell += f" ± {shown_value(metric, half_width)}"
    return cell


def shown_difference(metric, mean, half_width):
    """A paired difference ``mean ± half-width`` with the digits its test needs: the half-width to two
    significant digits (the mean to three without one), so that no nonzero difference reads 0."""
    if _missing(mean):
        return "-"
    percent = SHOWN[metric][1].endswith("%}")
    scale = 100.0 if percent else SCALE.get(metric, 1)
    suffix = "%" if percent else ""
    mean, half = mean * scale, (math.nan if _missing(half_width) else half_width * scale)
    basis, digits = (half, 2) if half > 0 else (abs(mean), 3)
    decimals = 0 if basis == 0 else max(0, digits - 1 - math.floor(math.log10(basis)))
    cell = f"{mean:+.{decimals}f}{suffix}" if mean != 0 else f"0{suffix}"
    spread = f"{half:.{decimals}f}" if half != 0 else "0"
    return cell if math.isnan(half) else f"{cell} ± {spread}{suffix}"


def policy_label(policy, degraded="", baseline=None):
    """A policy as tables name it, marked when it is the baseline or DEGRADED."""
    return (f"{policy}{' (baseline)' if policy == baseline else ''}"
            f"{f' ({DEGRADED}: does not fit)' if degraded else ''}")
