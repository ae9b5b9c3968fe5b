"""batio's pybatsim schedulers, installed as ``batio.schedulers``: Slurm's
backfilling (``backfill``) and the kit policies are made of (``reservation``,
``options``, ``jobio``) here, each paper's policies in its own sub-package.
This folder and each sub-package declare their catalog names below
(``batio.catalog`` finds them)."""

# name -> (file in this folder, preset options)
SCHEDULERS = {
    "fcfs": ("backfill.py", {"backfill_max": 0}),
    "easy": ("backfill.py", {"backfill_max": 1}),
    "conservative": ("backfill.py", {"backfill_max": None}),
    "backfill": ("backfill.py", {}),
    "easy-ljf": ("backfill.py", {"backfill_max": 1, "order": "ljf"}),
}
# file -> the bundled platform and workload its policies are made for (`batio parity` runs every name on them)
BUNDLED_INPUTS = {"backfill.py": ("cluster16_pfs", "demo")}
# name -> its own, where they differ from its file's: EASY in longest-first order is CATIOS's baseline (LJF-BF).
BUNDLED_INPUTS_OF_NAME = {"easy-ljf": ("catios_cluster", "catios_bw")}
