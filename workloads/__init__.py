"""Bundled Batsim workloads, found through ``batio.catalog``: their JSON, the
Markdown pages of the imported ones, and the generators that write them or
make a paper's workload for each seed (``demo``, ``stria``, ``periodic``,
``catios``, ``equilibrio``, ``memcluster486``; README.md lists them)."""
