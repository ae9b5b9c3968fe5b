"""Paper 001, Jeannot, Pallez, Vidal, I/O-aware Job-Scheduling: Exploiting the
Impacts of Workload Characterizations to select the Mapping Strategy: I/O-aware
list scheduling (``ioList``) and pack scheduling (``ioPack``), and the paper's
metrics of periodic jobs (``metrics``: stretch, utilisation over time)."""
