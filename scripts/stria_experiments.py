"""Seed 000's experiments (Fig. 3, 5, 6): default backfill, I/O-aware and
workload-adaptive scheduling of Workloads 1 and 2 on both Stria platforms.

For each platform: the history of every job type run alone (the paper's
"pre-trained" estimator), then one `batio sweep` over both workloads, the
seeds and the six policies, then a makespan table against the paper's.

    .venv/bin/python scripts/stria_experiments.py [--seeds 2] [--workers 2] [--out out/stria]
"""

import argparse
import json
from pathlib import Path
import subprocess
import sys

import pandas as pd
import yaml

from batio.schedulers.workload_adaptive.pretrain import pretrain
from batio.workloads.stria import stria_workload

ROOT = Path(__file__).resolve().parents[1]
PLATFORMS = {"literal": "stria15_lustre", "congested": "stria15_lustre_congested"}
# The paper's makespan improvements over default Slurm backfill (Sections VI, VII; Fig. 6).
PAPER = {1: {"io_aware-20": 10, "io_aware-15": 20, "adaptive-20": 26, "adaptive-20-untrained": 25},
         2: {"io_aware-20": 4, "io_aware-15": 7, "adaptive-20": 12}}


def policies(history):
    pretrained = {"estimator": "pretrained", "history": str(history)}
    return [{"scheduler": "conservative", "label": "default"},
            {"scheduler": "io_aware", "options": {"limit": 20, **pretrained}, "label": "io_aware-20"},
            {"scheduler": "io_aware", "options": {"limit": 15, **pretrained}, "label": "io_aware-15"},
            {"scheduler": "adaptive", "options": {"limit": 20, **pretrained}, "label": "adaptive-20"},
            {"scheduler": "adaptive", "options": {"limit": 15, **pretrained}, "label": "adaptive-15"},
            {"scheduler": "adaptive", "options": {"limit": 20}, "label": "adaptive-20-untrained"}]


def run_platform(name, platform, seeds, workers, out):
    out.mkdir(parents=True, exist_ok=True)
    samples = []
    for number in (1, 2):
        path = out / f"stria_w{number}_sample.json"
        path.write_text(json.dumps(stria_workload(number, seed=1)))
        samples.append(str(path))
    history = out / "history.json"
    if not history.exists():
        pretrain(platform, samples, str(history))
    config = {"platforms": [platform],
              "workloads": [{"generator": "batio.workloads.stria:stria_workload", "args": {"number": n},
                             "name": f"workload{n}"} for n in (1, 2)],
              "seeds": seeds, "schedulers": policies(history), "baseline": "default", "io_slowdown": False}
    config_path = out / "sweep.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    subprocess.run([sys.executable, "-m", "batio", "sweep", str(config_path), "--out", str(out / "sweep"),
                    "--workers", str(workers), "--quiet"], check=False)
    results = pd.read_csv(out / "sweep" / "results.csv")
    results["calibration"] = name
    return results


def improvement_table(results):
    ok = results[results["status"] == "ok"]
    means = ok.groupby(["calibration", "workload", "policy"])["makespan"].mean().unstack("policy")
    gains = (1 - means.div(means["default"], axis=0)) * 100
    return means, gains


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "out" / "stria"))
    args = parser.parse_args()
    out = Path(args.out)
    results = pd.concat([run_platform(name, platform, list(range(1, args.seeds + 1)), args.workers, out / name)
                         for name, platform in PLATFORMS.items()])
    results.to_csv(out / "results.csv", index=False)
    means, gains = improvement_table(results)
    print("mean makespan (s)\n", means.round(0).to_string(), "\n")
    print("makespan improvement over default backfill (%)\n", gains.round(1).to_string())
    print("paper (%):", PAPER)


if __name__ == "__main__":
    main()
