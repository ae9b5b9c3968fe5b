"""Paper 002, Tseng et al., CATIOS: Time-Resolved I/O-Aware Job Scheduling for
HPC Systems: CATIOS (``catios``) and the average-based TIOAS it is compared
with (``tioas``), the per-second demand they reserve (``demandload``), its
encoding in job profiles (``iodemand``), and the matching of a job to
historical jobs by command line (``matcher``)."""
