"""Paper 004, Gonthier et al., Locality-aware batch scheduling of I/O intensive
workloads: FCFS, EFT, LEA, LEO and LEM with or without backfilling
(``locality``), the nodes' cores and file memory they plan with
(``nodememory``), and the paper's metrics (``metrics``: flow, stretch, load
time, and the comparison with the authors' simulator)."""


SCHEDULERS = {
    name: ("locality.py", {"policy": policy, "backfill": backfill})
    for policy, plain in (("fcfs", "locality-fcfs"), ("eft", "locality-eft"), ("lea", "lea"), ("leo", "leo"),
                          ("lem", "lem"))
    for backfill, name in ((False, plain), (True, f"{plain}-bf"))
}
BUNDLED_INPUTS = {"locality.py": ("memcluster486", "memcluster486_slice")}
# File loads are dynamic jobs run on nodes their jobs share.
BATSIM_FEATURES = ("dynamic_jobs", "compute_sharing")
