"""`batio iomodel`: train the per-job I/O model on a centre's weeks, and give a week its jobs' own I/O."""

import json
import logging
from pathlib import Path
import tempfile

from batio import catalog
from batio.errors import InputError
from batio.outfiles import check_destination, write_text

log = logging.getLogger(__name__)


def command_iomodel(args):
    from batio.engines.embedded.routes import bandwidths
    from batio.twin.iomodel import load, train
    platform = catalog.platform_path(args.platform)
    fs = bandwidths(platform)
    check_destination(args.out)
    if args.action == "train":
        model = train(args.weeks, fs)
        model.save(args.out)
        print(f"{len(model.training)} jobs of {len(model.weeks)} weeks ({', '.join(model.weeks)}); "
              f"{len(model.held_out)} held-out errors (each week predicted by the others)")
        print(f"written: {args.out}")
        return 0
    if not args.model:
        raise InputError("--model", "iomodel apply needs the model file (`batio iomodel train ... --out M.json`)")
    if len(args.weeks) != 1:
        raise InputError("iomodel apply", f"takes one workload, got {len(args.weeks)}")
    return _apply(args, platform, fs, load(args.model))


def _apply(args, platform, fs, model):
    from batio.twin.iomodel import read_week
    from batio.twin.iophases import own_io
    from batio.twin.validate import replayer
    path = args.weeks[0]
    workload, _ = read_week(path)
    with tempfile.TemporaryDirectory(prefix="batio-iomodel-") as scratch:
        replay = replayer(platform, Path(scratch), "round")
        counts = own_io(workload, model, fs, args.end, seed=args.seed, replay=replay)
    write_text(Path(args.out), json.dumps(workload, indent=1) + "\n")
    print(f"{counts['jobs']} jobs that move bytes at the {args.end} end: {counts['measured']} measured, "
          f"{counts['predicted']['recurrence']} predicted by recurrence, {counts['predicted']['learned']} learned; "
          f"{counts['platform_slower']} whose platform is slower than their own time; "
          f"{counts['high_end_unfit']} that cannot end within their recorded run time")
    print(f"written: {args.out}")
    return 0
