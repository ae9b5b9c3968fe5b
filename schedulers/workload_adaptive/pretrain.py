"""Pretraining of the history-based estimator (schedulers/workload_adaptive/estimator.py): each job
type's first job run alone through the embedded engine.

``python -m batio.schedulers.workload_adaptive.pretrain --platform P --workload W --out history.json``
writes the history file that the estimator's mode ``pretrained`` reads. Kept
apart from the estimator, which schedulers import, so that they never import
the engine that runs them.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
import csv
import json
from pathlib import Path
import sys
import tempfile

from batio import engines
from batio.catalog import platform_path, scheduler_file_and_options, workload_path
from batio.errors import BatioError
from batio.inputs.spec import RunSpec
from batio.schedulers.jobio import bytes_moved
from batio.schedulers.workload_adaptive.estimator import EstimatorError, similarity_key


def pretrain(platform: str, workloads: Sequence[str], out: str | None = None,
             scheduler: str = "fcfs") -> dict:
    """Run the first job of each job type of ``workloads`` alone on
    ``platform`` through the embedded engine; return (and write to ``out``)
    the history ``{"apps": {key: {"rate", "runtime", "bytes", "job"}}, ...}``.

    Keys are those the schedulers use (``similarity_key``; workloads are
    named ``w0``, ``w1``... in the order given, as in ``batio run``). Each run
    is a one-job workload holding that job at time 0 with every profile of
    its workload; ``scheduler`` (a batio scheduler name) starts it.
    """
    platform_file = platform_path(platform)
    scheduler_file, options = scheduler_file_and_options(scheduler)
    apps: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="batio-pretrain-") as scratch:
        for index, name in enumerate(workloads):
            workload = json.loads(workload_path(name).read_text())
            profiles = workload["profiles"]
            for raw in workload["jobs"]:
                key = similarity_key(raw, f"w{index}", raw["profile"])
                if key in apps:
                    continue
                alone = dict(raw, subtime=0.0)
                run_dir = Path(scratch) / f"run{len(apps)}"
                run_dir.mkdir()
                single = run_dir / "alone.json"
                single.write_text(json.dumps({"nb_res": workload["nb_res"], "jobs": [alone],
                                              "profiles": profiles}))
                engines.run(RunSpec(str(platform_file), [str(single)], str(scheduler_file),
                                 str(run_dir / "out"), options=options))
                row = _only_row(run_dir / "out_jobs.csv")
                if row["final_state"] != "COMPLETED_SUCCESSFULLY":
                    raise EstimatorError(f"pretraining {key}: job {raw['id']} of {name} ended "
                                         f"{row['final_state']} when run alone")
                runtime = float(row["execution_time"])
                read, written = bytes_moved(profiles[raw["profile"]], profiles, raw["res"])
                apps[key] = {"rate": (read + written) / runtime if runtime > 0 else 0.0,
                             "runtime": runtime, "bytes": read + written,
                             "job": f"w{index}!{raw['id']}"}
    history = {"apps": apps, "platform": str(platform), "workloads": [str(w) for w in workloads],
               "how": "each job type's first job run alone (batio.schedulers.workload_adaptive.pretrain)"}
    if out is not None:
        Path(out).write_text(json.dumps(history, indent=1) + "\n")
    return history


def _only_row(path: Path) -> dict:
    with open(path, newline="") as stream:
        rows = list(csv.DictReader(stream))
    if len(rows) != 1:
        raise EstimatorError(f"{path}: expected one job, found {len(rows)}")
    return rows[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m batio.schedulers.workload_adaptive.pretrain",
        description="Write a history file for estimator 'pretrained': each job type of the workloads "
                    "run alone on the platform through the embedded engine.")
    parser.add_argument("--platform", required=True)
    parser.add_argument("--workload", action="append", required=True,
                        help="repeat for several workloads (named w0, w1, ... as in batio run)")
    parser.add_argument("--out", required=True, help="history JSON file to write")
    args = parser.parse_args(argv)
    try:
        history = pretrain(args.platform, args.workload, args.out)
    except BatioError as error:
        print(f"python -m batio.schedulers.workload_adaptive.pretrain: error: {error}", file=sys.stderr)
        return 2
    for key, values in history["apps"].items():
        print(f"{key}: {values['rate'] / 2**30:.4f} GiB/s over {values['runtime']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
