"""Seed 000's experiments (Fig. 3, 5, 6): default backfill, I/O-aware and
workload-adaptive scheduling of Workloads 1 and 2 on both Stria platforms,
as two sweep configs; this script makes the makespan table against the
paper's from their outputs.

    .venv/bin/batio sweep scripts/sweeps/stria_literal.yaml --out out/sweeps/stria_literal --workers 2
    .venv/bin/batio sweep scripts/sweeps/stria_congested.yaml --out out/sweeps/stria_congested --workers 2
    .venv/bin/python scripts/stria_experiments.py --from-sweep out/sweeps/stria_literal out/sweeps/stria_congested

The pre-trained estimators read the histories the configs name
(``scripts/sweeps/history-*.json``: every job type of the bundled
``stria_w1`` and ``stria_w2``, the generator's seed-1 workloads, run alone
on the platform by ``batio.schedulers.workload_adaptive.pretrain``).
``--out`` gets ``results.csv``, the sweeps' rows with their calibration.
"""

import argparse
from pathlib import Path

import pandas as pd

from batio.errors import InputError, exits_on_error
from batio.sweep import read_results

ROOT = Path(__file__).resolve().parents[1]
CALIBRATIONS = {"stria15_lustre": "literal", "stria15_lustre_congested": "congested"}
# The paper's makespan improvements over default Slurm backfill (Sections VI, VII; Fig. 6).
PAPER = {1: {"io_aware-20": 10, "io_aware-15": 20, "adaptive-20": 26, "adaptive-20-untrained": 25},
         2: {"io_aware-20": 4, "io_aware-15": 7, "adaptive-20": 12}}


def read_sweeps(folders):
    """The successful runs of the sweeps, each with its calibration."""
    frames = []
    for folder in folders:
        ok, _ = read_results(folder, "scripts/sweeps/stria_{literal,congested}.yaml")
        platforms = {Path(name).stem for name in ok["platform"]}
        unknown = platforms - set(CALIBRATIONS)
        if unknown:
            raise InputError(folder, f"platforms {sorted(unknown)} are neither Stria calibration "
                                     f"({', '.join(CALIBRATIONS)})")
        ok["calibration"] = [CALIBRATIONS[Path(name).stem] for name in ok["platform"]]
        frames.append(ok)
    return pd.concat(frames, ignore_index=True)


def improvement_table(results):
    means = results.groupby(["calibration", "workload", "policy"])["makespan"].mean().unstack("policy")
    gains = (1 - means.div(means["default"], axis=0)) * 100
    return means, gains


@exits_on_error
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-sweep", nargs="+", metavar="DIR", required=True,
                        help="output folders of `batio sweep scripts/sweeps/stria_{literal,congested}.yaml`")
    parser.add_argument("--out", default=str(ROOT / "out" / "stria"), help="where results.csv goes")
    args = parser.parse_args(argv)
    results = read_sweeps(args.from_sweep)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results.to_csv(out / "results.csv", index=False)
    means, gains = improvement_table(results)
    print("mean makespan (s)\n", means.round(0).to_string(), "\n")
    print("makespan improvement over default backfill (%)\n", gains.round(1).to_string())
    print("paper (%):", PAPER)


if __name__ == "__main__":
    main()
