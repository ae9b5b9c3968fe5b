"""Paper 002, Tseng et al., CATIOS: Time-Resolved I/O-Aware Job Scheduling for
HPC Systems: CATIOS (``catios``) and the average-based TIOAS it is compared
with (``tioas``), the per-second demand they reserve (``demandload``), its
encoding in job profiles (``iodemand``), and the matching of a job to
historical jobs by command line (``matcher``)."""


# CATIOS and TIOAS predict each job's I/O from the bundled history unless told the oracle's demand.
SCHEDULERS = {
    **{f"catios{suffix}{knowledge}": ("catios.py", {**options, **demand})
       for suffix, options in (("", {}), ("-ljf", {"priority": "ljf"}), ("-mix", {"priority": "mix"}),
                               ("-greedy", {"reserve_first": False}))
       for knowledge, demand in (("", {"history": "catios_bw_history"}), ("-oracle", {"demand": "oracle"}))},
    "tioas": ("tioas.py", {"backfill_max": 1, "history": "catios_bw_history"}),
    "tioas-oracle": ("tioas.py", {"backfill_max": 1, "demand": "oracle"}),
}
BUNDLED_INPUTS = {"catios.py": ("catios_cluster", "catios_bw"), "tioas.py": ("catios_cluster", "catios_bw")}
