"""Bundled pybatsim schedulers, importable as ``batio.schedulers``."""
