"""Benchmark of the contention model (throughput lost under contention): engine
wall time with it on and off.

Workload 2 of paper 000 (workloads/stria_w2.json, 1,550 jobs, 1,520 of them
writes) under default backfill (`conservative`) on `stria15_lustre_fig4`,
whose `lustre_sustained` link carries the Fig. 4 curve ("on"), and on the
same file with the curve removed ("off"), one run after the other. Besides
the engine's wall time, the CPU time of the simulation's process (engine and
in-process scheduler), which other work on a shared machine disturbs less.

    .venv/bin/python scripts/bench_contention.py [--reps 1]
"""

import argparse
import json
from pathlib import Path
import re
import resource
import tempfile

from batio import engines
from batio.errors import exits_on_error
from batio.resolve import resolve

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = ROOT / "platforms" / "stria15_lustre_fig4.xml"


@exits_on_error
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        off = folder / "stria15_lustre_fig4_off.xml"
        off.write_text(re.sub(r'\s*<prop id="batio:contention"[^>]*/>', "", PLATFORM.read_text()))
        rows: list[tuple[str, int, float, float, float, int]] = []
        for rep in range(args.reps):
            for name, platform in (("off", off), ("on", PLATFORM)):
                prefix = folder / f"{name}{rep}" / "out"
                before = _children_cpu()
                result = engines.run(resolve("conservative", {}, str(platform),
                                             [str(ROOT / "workloads" / "stria_w2.json")], prefix).spec)
                record = json.loads(Path(f"{prefix}_run.json").read_text())
                rows.append((name, rep, result["wall_time"], _children_cpu() - before, result["simulated_time"],
                             record["contention_bandwidth_changes"]))
    print(f"{'model':<6} {'rep':>3} {'wall s':>8} {'CPU s':>7} {'makespan s':>11} {'bandwidth changes':>18}")
    for name, rep, wall, cpu, makespan, changes in rows:
        print(f"{name:<6} {rep:>3} {wall:>8.1f} {cpu:>7.1f} {makespan:>11.0f} {changes:>18}")
    for column, what in ((2, "wall time"), (3, "CPU time")):
        mean = {name: sum(float(r[column]) for r in rows if r[0] == name) / args.reps for name in ("off", "on")}
        print(f"on / off {what}: {mean['on'] / mean['off']:.3f}")


def _children_cpu():
    """CPU seconds of this process's finished children (each simulation runs in one)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
