"""Replay of a recorded schedule: jobs start when the real machine started them."""


# Jobs start at their recorded start times (batio import jobsio): what `batio validate` runs.
SCHEDULERS: dict[str, tuple[str, dict]] = {"replay": ("replay.py", {})}
BUNDLED_INPUTS = {"replay.py": ("cluster16_pfs", "jobsio_demo")}
