"""batio: I/O-aware batch scheduling for HPC, on Batsim's protocol."""

__version__ = "0.1.0"
