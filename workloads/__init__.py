"""Bundled Batsim workloads (data only), found through ``batio.catalog``."""
