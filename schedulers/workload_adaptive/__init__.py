"""Paper 000, Goponenko et al., Workload-Adaptive Scheduling for Efficient Use
of Parallel File Systems in HPC Clusters: the I/O-aware backfill (``ioAware``,
Section VI), the workload-adaptive target (``workloadAdaptive``), and the
history-based estimates of each job's throughput and duration they use
(``estimator``; ``python -m batio.schedulers.workload_adaptive.pretrain``)."""


SCHEDULERS = {
    "io_aware": ("ioAware.py", {}),
    "adaptive": ("workloadAdaptive.py", {}),
    "adaptive_naive": ("workloadAdaptive.py", {"two_group": False}),
}
BUNDLED_INPUTS = {"ioAware.py": ("stria15_lustre", "stria_w2"), "workloadAdaptive.py": ("stria15_lustre", "stria_w2")}
