"""Paper 003, Özden, Tarraf, Wolf, EquilibrIO: Taming the I/O Tides in HPC: the
policy (``equilibrio``) and the poster's metrics (``metrics``: I/O intensity,
mean distance, I/O slowdown)."""


SCHEDULERS = {
    "equilibrio": ("equilibrio.py", {}),
    "equilibrio-listing": ("equilibrio.py", {"backfill_guard": False, "backfill_order": "fixed"}),
}
BUNDLED_INPUTS = {"equilibrio.py": ("theta_quarter", "equilibrio_theta")}
