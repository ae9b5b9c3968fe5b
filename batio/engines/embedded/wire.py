"""Numbers as a scheduler reads them from Batsim 4.2.1.

Batsim's protocol writer (``protocol.hpp``, class ``Writer``) prints every
double with ``"%6f"``: ``now``, every event's ``timestamp`` and a killed
job's progress reach the scheduler rounded to the microsecond, while the
simulation itself runs on exact times. Schedulers compute their dates (a
``CALL_ME_LATER``, a deadline) from the rounded values, so the embedded
engine hands them the same ones.
"""


def as_batsim_writes(value: float) -> float:
    return float(f"{value:f}")
