"""The operating-system side of SimGrid's Python actors.

SimGrid's Python bindings run every actor on its own OS thread, and each
hand-over between actors wakes one thread blocked on its own futex. Linux
6.16 and later give a process a private futex hash sized for
min(threads, CPUs): 16 buckets on a 2-core machine, whatever the number of
threads. With thousands of live actors (a busy machine's running jobs) every
wake-up then walks a chain of hundreds of waiters: on this project's 2-core
machine (kernel 6.18), a message round trip between two actors took 4 to 5
times longer beside 3,000-6,000 sleeping actors than beside none.
"""

import ctypes
import logging

_log = logging.getLogger(__name__)

PR_FUTEX_HASH = 78
PR_FUTEX_HASH_SET_SLOTS = 1


def use_global_futex_hash():
    """Give this process the kernel's global futex hash (sized for the
    machine, as before 6.16) instead of its small private one.

    Needs no privilege; kernels before 6.16 have only the global hash and
    refuse the unknown option, which changes nothing.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:  # not a glibc/musl system: nothing to tune
        return
    if libc.prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, 0, 0, 0) != 0:
        _log.debug("prctl(PR_FUTEX_HASH) refused (errno %d): the kernel has no private futex hash",
                   ctypes.get_errno())
