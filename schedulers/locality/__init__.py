"""Paper 004, Gonthier et al., Locality-aware batch scheduling of I/O intensive
workloads: FCFS, EFT, LEA, LEO and LEM with or without backfilling
(``locality``), the nodes' cores and file memory they plan with
(``nodememory``), and the paper's metrics (``metrics``: flow, stretch, load
time, and the comparison with the authors' simulator)."""
