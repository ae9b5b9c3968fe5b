"""A scheduler file that never finishes being imported (an endless loop at module level)."""

from batsim.batsim import BatsimScheduler

while True:
    pass


class LoopsAtImport(BatsimScheduler):
    pass
