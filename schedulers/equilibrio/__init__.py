"""Paper 003, Özden, Tarraf, Wolf, EquilibrIO: Taming the I/O Tides in HPC: the
policy (``equilibrio``) and the poster's metrics (``metrics``: I/O intensity,
mean distance, I/O slowdown)."""
