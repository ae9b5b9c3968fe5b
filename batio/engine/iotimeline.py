"""Aggregate storage throughput over time, measured in the simulation.

Batsim has no such output, but every I/O paper plots it. Under SimGrid's
ptask model the rates of running transfers change only when some activity
starts or ends, so sampling every transfer's progress at those instants
gives the exact piecewise-constant read and write throughput of each
storage host.
"""

import csv
import math


class IoTimeline:
    def __init__(self, storage_names):
        self._storage_names = list(storage_names)
        # activity -> (storage traffic as [(name, read_bytes, write_bytes)], ratio left at last sample)
        self._active = {}
        self._last_time = 0.0
        self._pending = {name: [0.0, 0.0] for name in self._storage_names}
        self.rows = []  # (time, storage, read B/s, write B/s), from `time` until the next row of `storage`
        self._last_rate = {name: (0.0, 0.0) for name in self._storage_names}
        self.bytes_read = 0.0
        self.bytes_written = 0.0

    def sample(self, now):
        """Account the progress of every transfer since the last sample."""
        for activity, (traffic, ratio_before) in self._active.items():
            ratio = activity.remaining_ratio
            done = ratio_before - ratio
            if done > 0:
                for name, read_bytes, write_bytes in traffic:
                    self._pending[name][0] += done * read_bytes
                    self._pending[name][1] += done * write_bytes
                self._active[activity] = (traffic, ratio)
        if now > self._last_time:
            span = now - self._last_time
            for name in self._storage_names:
                read, write = self._pending[name]
                rate = (read / span, write / span)
                if not all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
                           for a, b in zip(rate, self._last_rate[name])):
                    self.rows.append((self._last_time, name, rate[0], rate[1]))
                    self._last_rate[name] = rate
                self.bytes_read += read
                self.bytes_written += write
                self._pending[name] = [0.0, 0.0]
            self._last_time = now

    def start(self, activity, traffic, now):
        """``traffic``: [(storage name, bytes read from it, bytes written to it)]."""
        self.sample(now)
        self._active[activity] = (traffic, 1.0)

    def stop(self, activity, now):
        self.sample(now)
        self._active.pop(activity, None)

    def finish(self, now):
        self.sample(now)
        for name in self._storage_names:
            if self._last_rate[name] != (0.0, 0.0):
                self.rows.append((now, name, 0.0, 0.0))

    def write_csv(self, path):
        with open(path, "w", newline="") as stream:
            writer = csv.writer(stream)
            writer.writerow(["time", "storage", "read_bytes_per_s", "write_bytes_per_s"])
            for time, name, read, write in self.rows:
                writer.writerow([f"{time:.6f}", name, f"{read:.6g}", f"{write:.6g}"])
