"""batio: I/O-aware batch scheduling for HPC, on Batsim's protocol."""

from importlib.metadata import version

# Written once, in pyproject.toml; read from the installed package's metadata.
__version__ = version("batio")
