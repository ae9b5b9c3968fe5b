"""Paper 001, Jeannot, Pallez, Vidal, I/O-aware Job-Scheduling: Exploiting the
Impacts of Workload Characterizations to select the Mapping Strategy: I/O-aware
list scheduling (``ioList``) and pack scheduling (``ioPack``), and the paper's
metrics of periodic jobs (``metrics``: stretch, utilisation over time)."""


SCHEDULERS = {
    "iolist": ("ioList.py", {}),
    "iopack": ("ioPack.py", {}),
    "iopack-random": ("ioPack.py", {"packs": "Random"}),
    "iopack-max": ("ioPack.py", {"packs": "Max"}),
    "iopack-char": ("ioPack.py", {"packs": "Char"}),
}
BUNDLED_INPUTS = {"ioList.py": ("periodic_rack", "periodic_mbn_a06"),
                  "ioPack.py": ("periodic_rack", "periodic_mbn_a06")}
