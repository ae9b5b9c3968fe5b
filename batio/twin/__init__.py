"""The twin of a real machine: what batio learns from a centre's own records, and how far it lies from them.

- ``iomodel``: each job's transfer time alone, learned from Darshan records (``batio iomodel``);
- ``iophases``: that time written into each job's profile, so the engine adds contention on top;
- ``validate``: a recorded week replayed with each job's own I/O, held against the measurements;
- ``calibrate``: a contention curve from a measurement of a real file system;
- ``fstwin``, ``fstwin_read``, ``fstwin_engine``: a file-system twin from TOKIO-ABC benchmark runs;
- ``accuracy``: the error statistics that every comparison of simulated and measured values uses.
"""
