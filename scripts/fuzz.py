"""The fuzz campaign, long: the properties of tests/test_fuzz.py
(workloads, runs, command lines, scheduler replies) and tests/test_fuzz_inputs.py
(every input format at its edges: platform XML, workload structure, contention
curves, SWF and sacct traces) and tests/test_fuzz_records.py (the real-machine
surfaces: jobsio records and Darshan runs, TOKIO-ABC summaries, a week's recorded
fields, damaged run folders, numeric options) with many examples and a random (or given) seed,
instead of CI's few seeded ones.

    .venv/bin/python scripts/fuzz.py [--examples N] [--simulations M] [--seed S] [--report out/fuzz/report.json]

Prints, and writes to the report, how many cases each property ran and how
they ended (clean error, accepted or run to the end, and any traceback, messy
error or hang); exits non-zero if a property failed (Hypothesis then prints
the smallest failing case and how to reproduce it). docs/fuzzing.md has the
last campaign's counts.
"""

import argparse
import json
import logging
import os
from pathlib import Path
import random
import sys

import pytest

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=1000, help="cases per property (default 1000)")
    parser.add_argument("--simulations", type=int,
                        help="cases of the properties that run SimGrid for each case, seconds apiece "
                             "(default: --examples / 50, at least 20)")
    parser.add_argument("--seed", type=int, help="Hypothesis seed (default: a random one, printed)")
    parser.add_argument("--report", default=str(ROOT / "out" / "fuzz" / "report.json"),
                        help="where to write the counts (JSON)")
    args = parser.parse_args(argv)
    logging.basicConfig(format="fuzz: %(message)s", level=logging.INFO)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    simulations = args.simulations if args.simulations is not None else max(20, args.examples // 50)
    os.environ.update(BATIO_FUZZ_PROFILE="fuzz", BATIO_FUZZ_EXAMPLES=str(args.examples),
                      BATIO_FUZZ_SIMULATIONS=str(simulations), BATIO_FUZZ_REPORT=str(Path(args.report).resolve()))
    logging.info("seed %d, %d examples per property, %d for those simulating every case", seed, args.examples,
                 simulations)
    code = pytest.main([str(ROOT / "tests" / "test_fuzz_inputs.py"), str(ROOT / "tests" / "test_fuzz_records.py"),
                        str(ROOT / "tests" / "test_fuzz.py"), "-q",
                        "-p", "no:cacheprovider", f"--hypothesis-seed={seed}"])
    report = Path(args.report)
    counts = json.loads(report.read_text()) if report.exists() else {}
    counts.update(seed=seed, examples_per_property=args.examples, simulations_per_property=simulations,
                  passed=code == 0)
    report.write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")
    logging.info("cases run: %s", json.dumps(counts, sort_keys=True))
    logging.info("report: %s", report)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
