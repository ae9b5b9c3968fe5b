"""Bundled SimGrid platforms, found through ``batio.catalog``: their XML, a
Markdown page each, the measured contention curves they are calibrated on
(``calibrations/``), and ``memcluster486.py``, which writes its platform."""
