"""Bundled SimGrid platforms (data only), found through ``batio.catalog``."""
