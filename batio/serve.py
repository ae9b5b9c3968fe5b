"""Serve a scheduler to a Batsim that will connect: `python -m batio.serve NAME`.

For docker-compose and for real Batsim runs by hand: resolves batio and
pybatsim scheduler names like `batio run`, then runs pybatsim's launcher
bound on all interfaces, with the scheduler loaded by batio.launcher.
"""

import argparse
import json
from pathlib import Path
import sys

from batio import catalog, launcher
from batio.cli import _options
from batio.errors import BatioError


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m batio.serve", description=__doc__.split("\n")[0])
    parser.add_argument("scheduler")
    parser.add_argument("--options", default="{}")
    parser.add_argument("--port", type=int, default=28000)
    parser.add_argument("--outputs", default="out/batsim", help="folder created for Batsim's outputs")
    args = parser.parse_args(argv)
    try:
        scheduler, options = catalog.scheduler_file_and_options(args.scheduler, _options(args.options))
    except BatioError as error:
        print(f"batio.serve: error: {error}", file=sys.stderr)
        return 2
    Path(args.outputs).mkdir(parents=True, exist_ok=True)
    return launcher.main([str(scheduler), "-s", f"tcp://*:{args.port}", "-o", json.dumps(options), "-t", "0"])


if __name__ == "__main__":
    sys.exit(main())
