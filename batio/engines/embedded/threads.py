"""The operating-system side of SimGrid's Python actors.

SimGrid's Python bindings run every actor on its own OS thread, and each
hand-over between actors wakes one thread blocked on its own futex. Linux
6.16 and later give a process a private futex hash sized for
min(threads, CPUs): 16 buckets on a 2-core machine, whatever the number of
threads. With thousands of live actors (a busy machine's running jobs) every
wake-up then walks a chain of hundreds of waiters: on this project's 2-core
machine (kernel 6.18), a message round trip between two actors took 4 to 5
times longer beside 3,000-6,000 sleeping actors than beside none
(``use_global_futex_hash``). Each wake-up lands on whichever CPU the
kernel finds idle, though only one actor runs at a time (``OneCpu``). And
the woken thread preempts its waker before the waker lets go of the lock
they share (``no_wakeup_preemption``, while the engine has its CPU alone).
"""

import ctypes
import fcntl
import logging
import os
import tempfile
import threading
import time

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


def no_wakeup_preemption():
    """Put this thread, and the threads it creates from now on, under Linux's SCHED_BATCH policy.

    SimGrid 3.32 hands an actor over through a semaphore made of a mutex and
    a condition variable: the waker signals, then unlocks. Under the default
    policy the kernel lets the woken thread preempt the waker at once; it
    finds the mutex still held, blocks, and the waker runs again only to
    unlock it: two more thread switches per hand-over, most of an engine's
    time once the model's own work is small. SCHED_BATCH keeps the normal
    priority and fair share but never preempts on wake-up (the woken thread
    runs when its waker blocks, a moment later): measured on this project's
    2-core machine, delay jobs made 30 to 45 % fewer thread switches and
    took 25 to 40 % less CPU (docs/performance.md, on SCHED_BATCH). It changes when threads run, never what
    SimGrid decides. But a woken thread then also waits for any other
    program's running slice on its CPU: only for an engine alone on its CPU
    (``OneCpu``). Needs no privilege; refused, it changes nothing.
    """
    _set_policy(0, "SCHED_BATCH")


def _set_policy(thread, policy):
    if not hasattr(os, policy):
        return
    try:
        os.sched_setscheduler(thread, getattr(os, policy), os.sched_param(0))
    except OSError as refusal:  # a thread that ended meanwhile, or a system that refuses
        _log.debug("%s refused for thread %d (%s)", policy, thread, refusal)


class OneCpu:
    """Keeps the engine's actor threads on one CPU while no other process wants it.

    Only one actor thread runs at a time, but every hand-over wakes a thread
    that the kernel puts on whichever CPU is idle: the other CPU, which must
    first leave its idle state, while the waker's CPU goes idle. On one CPU
    the woken thread runs as soon as the waker blocks. The engine process
    takes a CPU that no other batio engine holds (an advisory lock per CPU
    in the temporary folder, released when the process ends) and binds its
    main thread to it before SimGrid starts any actor thread, so every actor
    thread inherits the binding. A watcher thread compares what the CPU
    spent on everything with what this process used (``/proc/stat``); once
    other processes take more than ``contended_share`` of it over a period,
    the kernel could not move them away, and every thread is let onto any
    CPU again, for good. While bound, the threads run under SCHED_BATCH
    (``no_wakeup_preemption``); let go, under the default policy again, so
    that a woken actor takes its CPU from a program that computes.
    """

    def __init__(self, contended_share=0.25, period_s=2.0):
        self.contended_share = contended_share
        self.period_s = period_s
        self.cpu = None
        self._allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
        self._lock_fd = None
        self._main = threading.get_native_id()
        if not hasattr(os, "sched_setaffinity") or len(self._allowed) < 2:
            return  # nothing to choose
        self.cpu, self._lock_fd = self._free_cpu()
        if self.cpu is None:
            _log.debug("every CPU holds a batio engine already: the engine's threads run on any CPU")
            return
        os.sched_setaffinity(0, {self.cpu})
        no_wakeup_preemption()
        threading.Thread(target=self._watch, name="batio-one-cpu", daemon=True).start()

    def _free_cpu(self):
        folder = tempfile.gettempdir()
        for cpu in sorted(self._allowed):
            path = os.path.join(folder, f"batio-engine-cpu{cpu}.lock")
            # Read-only, so that another user's engines share the lock files; created only if
            # missing (Linux refuses O_CREAT on another user's file in a sticky folder such as /tmp).
            try:
                try:
                    descriptor = os.open(path, os.O_RDONLY)
                except FileNotFoundError:
                    descriptor = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
            except OSError:  # an unwritable temporary folder: no lock to take
                continue
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(descriptor)
                continue
            return cpu, descriptor
        return None, None

    def _others_ticks(self):
        """CPU time (clock ticks) spent on the bound CPU by other processes since this one started."""
        with open("/proc/stat") as stats:
            for line in stats:
                if line.startswith(f"cpu{self.cpu} "):
                    user, nice, system = (int(value) for value in line.split()[1:4])
                    break
            else:
                raise ValueError(f"no cpu{self.cpu} line in /proc/stat")
        with open("/proc/self/stat") as stat:
            mine = stat.read().rsplit(")", 1)[1].split()
        return user + nice + system - int(mine[11]) - int(mine[12])  # minus this process's utime, stime

    def _watch(self):
        ticks_per_s = os.sysconf("SC_CLK_TCK")
        before = None
        while True:
            try:
                now = self._others_ticks()
            except (OSError, ValueError, IndexError):  # /proc cannot tell: do not stay bound blindly
                break
            if before is not None and now - before > self.contended_share * self.period_s * ticks_per_s:
                _log.info("CPU %d is shared with another process: the engine's threads now run on any CPU",
                          self.cpu)
                break
            before = now
            time.sleep(self.period_s)
        self._let_go()

    def _let_go(self):
        """Every thread of this process onto any allowed CPU, and the CPU's lock given back."""
        self.cpu = None
        # The main thread first: the actor threads it creates from now on inherit its binding and policy.
        for task in [self._main, *map(int, os.listdir("/proc/self/task"))]:
            try:
                os.sched_setaffinity(task, self._allowed)
            except OSError:  # the thread ended meanwhile
                pass
            _set_policy(task, "SCHED_OTHER")
        assert self._lock_fd is not None  # a CPU was taken, with its lock
        os.close(self._lock_fd)
