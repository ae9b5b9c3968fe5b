"""Progress of long commands (`compare`, `sweep`, `matrix`): a bar on a terminal, else a log
line every few percent, so that a batch job's log shows how far a sweep has gone."""

import logging
import sys
import time

logger = logging.getLogger("batio.progress")
STEP_PERCENT = 5


class LogProgress:
    """tqdm's ``update``, ``set_postfix_str`` and ``close``, as a log line every STEP_PERCENT % of ``total``."""

    def __init__(self, total, unit="runs"):
        self.total, self.unit, self.done, self.postfix = total, unit, 0, ""
        self.started = time.monotonic()
        self.next_percent = STEP_PERCENT

    def update(self, count=1):
        self.done += count
        percent = 100 * self.done / self.total if self.total else 100
        if percent >= self.next_percent or self.done == self.total:
            while self.next_percent <= percent:
                self.next_percent += STEP_PERCENT
            logger.info("%s: %d of %d done (%.0f %%) after %.0f s%s", self.unit, self.done, self.total, percent,
                        time.monotonic() - self.started, f", {self.postfix}" if self.postfix else "")

    def set_postfix_str(self, text, refresh=True):
        self.postfix = text

    def close(self):
        pass


class JobProgress:
    """`batio run`'s bar over jobs finished, showing simulated time (made for a terminal only)."""

    def __init__(self):
        self.bar = None

    def __call__(self, now, finished, total):
        if self.bar is None:
            from tqdm import tqdm
            self.bar = tqdm(total=total, unit="job", desc="simulating", file=sys.stderr, leave=False)
        self.bar.total = total
        self.bar.set_postfix_str(f"t={now:,.0f} s", refresh=False)
        self.bar.update(finished - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def progress_bar(total, enabled, unit="runs"):
    """Nothing when not ``enabled``; a tqdm bar on a terminal; else a LogProgress."""
    if enabled and not sys.stderr.isatty():
        return LogProgress(total, unit)
    from tqdm import tqdm
    return tqdm(total=total, unit=unit.rstrip("s"), desc=unit, file=sys.stderr, disable=not enabled)
