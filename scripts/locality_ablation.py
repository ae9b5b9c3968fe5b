"""Paper 004: batio's locality study against the authors' simulator, and the
ablation of batio's physical choices, from the two ablation sweeps.

    batio sweep scripts/sweeps/locality_ablation_restart.yaml --workers 2
    batio sweep scripts/sweeps/locality_ablation_replay.yaml --workers 2
    python scripts/locality_ablation.py out/sweeps/locality_ablation_restart \\
        out/sweeps/locality_ablation_replay --out scripts/results/locality

The whole day's ablation (FCFS and LEA) is made the same way from
``locality_ablation_day_restart.yaml`` and ``_replay.yaml`` with
``--slice day`` (no recorded authors' runs by that name: no reproduction
table, and the authors' simulator's column is left out).

Run labels are VARIANT.MODEL (the sweeps' comments name the models). Writes,
in --out:

* ``reproduction.md``: each variant under the authors' model against the
  authors' simulator on the same input (their per-job output recorded in
  ``tests/data/locality_authors``): both mean stretches, their ratio, the
  share of jobs whose t_k is within 1 s of theirs, the same node, the worst
  job;
* ``ablation.md`` / ``ablation.csv``: per variant and model, the mean
  stretch over the evaluated jobs and the improvement over FCFS (FCFS-BF for
  the -BF variants) within the same model, above 1 better; the authors'
  simulator's own first;
* with ``--split-hours H``, ``ablation_split.md`` / ``.csv``: the same over
  the evaluated jobs submitted in the first H hours of the evaluated
  window, and over those after.
"""
import argparse
import logging
from pathlib import Path
import sys

import pandas as pd

from batio.errors import exits_on_error
from batio.outfiles import markdown_table
from batio.schedulers.locality import metrics as lm
from batio.sweep import read_results

ROOT = Path(__file__).resolve().parent.parent
AUTHORS = ROOT / "tests" / "data" / "locality_authors"
VARIANTS = ["fcfs", "fcfs-bf", "eft", "eft-bf", "lea", "lea-bf", "leo", "leo-bf", "lem", "lem-bf"]
# One of batio's choices added to the authors' model, replay with one more,
# then all of them, then batio's model with one of the authors' choices put
# back (the sweeps' comments define each).
MODELS = ["authors", "link", "memory", "rounds", "paper", "replay", "replay_link", "replay_memory",
          "replay_paper", "batio", "batio_fixed", "batio_in_use", "batio_authors_code", "batio_restart"]
BANDWIDTH = 1e8   # platforms/memcluster486.xml: 0.1 GB/s per node

log = logging.getLogger("locality_ablation")


def finished_runs(sweep_dirs):
    """{label: (job table, wall time in s)} of every successful run."""
    runs = {}
    for sweep in sweep_dirs:
        ok, _ = read_results(sweep, "scripts/sweeps/locality_ablation_*.yaml", partial=True)
        for row in ok.itertuples():
            prefix = Path(sweep) / row.run_dir / "out"
            runs[row.policy] = (lm.job_table(prefix, row.workload_file, BANDWIDTH), row.wall_time_s)
    return runs


def authors_name(variant):
    return variant.upper().replace("-", "_")


def baseline(variant):
    return "fcfs-bf" if variant.endswith("-bf") else "fcfs"


def reproduction(runs, slice_name):
    walls = AUTHORS / f"{slice_name}_wall_times.csv"
    authors_wall = pd.read_csv(walls).set_index("variant")["wall_time_s"] if walls.exists() else {}
    rows = []
    for variant in VARIANTS:
        label = f"{variant}.authors"
        reference = AUTHORS / f"{slice_name}_{authors_name(variant)}.csv"
        if label not in runs or not reference.exists():
            continue
        table, wall = runs[label]
        comparison = lm.compare_with_authors(table, lm.read_authors_gantt(reference))
        rows.append({"variant": variant, **comparison, "wall_time_s": wall,
                     "authors_wall_time_s": authors_wall.get(authors_name(variant), float("nan"))})
    return pd.DataFrame(rows)


def authors_stretch(table, variant, slice_name):
    """The authors' mean stretch of ``variant``, from their recorded ends and
    the job descriptions of ``table`` (a restart-mode run on the same input)."""
    reference = AUTHORS / f"{slice_name}_{authors_name(variant)}.csv"
    return lm.compare_with_authors(table, lm.read_authors_gantt(reference))["authors_mean_stretch"]


def ablation(runs, slice_name):
    stretch = {}
    restart_table = next((table for label, (table, _) in runs.items() if label.endswith(".authors")), None)
    if restart_table is not None:
        stretch["authors' simulator"] = {variant: authors_stretch(restart_table, variant, slice_name)
                                         for variant in VARIANTS
                                         if (AUTHORS / f"{slice_name}_{authors_name(variant)}.csv").exists()}
    for model in MODELS:
        found = {variant: lm.summary(runs[f"{variant}.{model}"][0])["mean_stretch"]
                 for variant in VARIANTS if f"{variant}.{model}" in runs}
        if found:
            stretch[model] = found
    return improvements(stretch)


def split_ablation(runs, hours):
    """The ablation's mean stretch over the evaluated jobs submitted in the
    first ``hours`` of the evaluated window, and over those after: where a
    model's verdict is made. Its models are named "MODEL, first H h" and
    "MODEL, after H h"."""
    stretch = {}
    for model in MODELS:
        first, after = {}, {}
        for variant in VARIANTS:
            if f"{variant}.{model}" not in runs:
                continue
            table = runs[f"{variant}.{model}"][0]
            evaluated = table[table["category"] == lm.EVALUATED]
            early = evaluated["subtime"] < lm.evaluated_window(table)[0] + hours * 3600
            first[variant] = float(evaluated[early]["stretch"].mean())
            after[variant] = float(evaluated[~early]["stretch"].mean())
        if first:
            stretch[f"{model}, first {hours:g} h"] = first
            stretch[f"{model}, after {hours:g} h"] = after
    return improvements(stretch)


def improvements(stretch):
    """{model: {variant: mean stretch}} as rows with each variant's
    improvement over its baseline within the same model (above 1 better)."""
    rows = []
    for model, values in stretch.items():
        for variant, value in values.items():
            base = values.get(baseline(variant))
            rows.append({"model": model, "variant": variant, "mean_stretch": value,
                         "improvement": None if base is None else base / value})
    return pd.DataFrame(rows)


def write_ablation(table, out, name):
    """``name``.csv and ``name``.md (variants as rows, models as columns) in ``out``."""
    table.to_csv(out / f"{name}.csv", index=False)
    models = list(dict.fromkeys(table["model"]))
    cells = table.set_index(["variant", "model"])
    rows = []
    for variant in VARIANTS:
        row = [variant]
        for model in models:
            if (variant, model) in cells.index:
                entry = cells.loc[(variant, model)]
                improvement = "" if pd.isna(entry["improvement"]) else f" ({entry['improvement']:.3f})"
                row.append(f"{entry['mean_stretch']:.3f}{improvement}")
            else:
                row.append("")
        if any(row[1:]):
            rows.append(row)
    (out / f"{name}.md").write_text(markdown_table(["variant", *models], rows, align_right_from=1) + "\n")
    print((out / f"{name}.md").read_text())


@exits_on_error
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweeps", nargs="+", help="the ablation sweeps' output folders")
    parser.add_argument("--slice", default="slice_12_2_1_1",
                        help="name of the recorded authors' runs in tests/data/locality_authors")
    parser.add_argument("--split-hours", type=float, default=None,
                        help="also ablation_split.md: the evaluated jobs submitted in the window's first "
                             "SPLIT_HOURS hours, and those after")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.split_hours is not None and not 0 < args.split_hours < float("inf"):
        parser.error(f"--split-hours: expected a positive number of hours, got {args.split_hours:g}")
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    runs = finished_runs(args.sweeps)
    if not runs:
        sys.exit(f"{', '.join(args.sweeps)}: no finished run (runs/*/result.json)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    compared = reproduction(runs, args.slice)
    if not compared.empty:
        rows = [[r.variant, f"{r.authors_mean_stretch:.3f}", f"{r.mean_stretch:.3f}", f"{r.stretch_ratio:.3f}",
                 f"{r.start_within_tolerance:.1%}", f"{r.evaluated_start_within_tolerance:.1%}",
                 f"{r.same_node:.1%}", f"{r.worst_job} ({r.worst_start_gap:.0f} s)",
                 f"{r.wall_time_s:.0f} / {r.authors_wall_time_s:.1f}"]
                for r in compared.itertuples()]
        (out / "reproduction.md").write_text(markdown_table(
            ["variant", "authors' mean stretch", "batio (authors' model)", "ratio", "t_k within 1 s (all jobs)",
             "t_k within 1 s (evaluated)", "same node", "worst job (t_k gap)", "wall time (s): batio / authors"],
            rows, align_right_from=1) + "\n")
        compared.to_csv(out / "reproduction.csv", index=False)

    write_ablation(ablation(runs, args.slice), out, "ablation")
    if args.split_hours is not None:
        write_ablation(split_ablation(runs, args.split_hours), out, "ablation_split")


if __name__ == "__main__":
    main()
