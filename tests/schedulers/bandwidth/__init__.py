"""Conservative backfilling that also reserves storage bandwidth
(CONTRIBUTING.md's example of a paper folder)."""

# name -> (file in this folder, preset options)
SCHEDULERS = {"bandwidth": ("bandwidthBackfill.py", {"bandwidth": 60e6})}
# file -> the bundled platform and workload its policies are made for
BUNDLED_INPUTS = {"bandwidthBackfill.py": ("cluster16_pfs", "demo")}
