"""One simulation on the embedded engine, from inputs to output files.

Design notes: docs/internals.md.
"""

import contextlib
from dataclasses import asdict
import json
import logging
import multiprocessing
import os
from pathlib import Path
import resource
import signal
import sys
import threading
import time
import traceback

from batio import __version__
from batio.engines.embedded.iotimeline import progress_readable
from batio.engines.processes import (
    END_GRACE_S,
    SignalListener,
    adopt_orphans,
    die_with_parent,
    end_descendants,
    signal_group,
)
from batio.errors import (
    BatioError,
    EngineError,
    InputError,
    Interrupted,
    InvalidConfiguration,
    OutputError,
    SchedulerError,
    listed,
)
from batio.inputs.spec import RunSpec, file_digest
from batio.outfiles import writing

OUTPUT_SUFFIXES = ("_jobs.csv", "_schedule.csv", "_machine_states.csv", "_io.csv", "_run.json")


# SimGrid releases whose Python bindings read Exec.remaining_ratio holding the
# GIL: 3.35.0 (Ubuntu 24.04's python3-simgrid), 4.0.0 (Debian 13's) and 4.1.0
# (PyPI's `simgrid` 4.1, a GIL release that pybind11 2 ignores). The engine
# then hangs on its first read while another actor is due (iotimeline), unless
# it can call SimGrid's C function instead, which it does wherever it finds it.
_HANGS = ("its Python bindings hang on reading a transfer's progress (Exec.remaining_ratio keeps the GIL) "
          "and its C function sg_exec_get_remaining_ratio cannot be found")
UNUSABLE_SIMGRIDS = {"3.35.0": _HANGS, "4.0.0": _HANGS, "4.1.0": _HANGS}


def _import_simgrid_quietly():
    """SimGrid prints a configuration notice on stderr when imported."""
    stderr = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            import simgrid
    except ImportError as error:
        raise EngineError(f"the embedded engine needs SimGrid's Python bindings, which do not import here "
                          f"({error}): install Debian's python3-simgrid (scripts/install.sh does), "
                          "or use --engine batsim") from None
    finally:
        os.dup2(stderr, 2)
        os.close(stderr)
    check_simgrid(simgrid)
    return simgrid


def check_simgrid(simgrid):
    """Refuse, in one line, a SimGrid whose bindings are known not to run this engine."""
    version = getattr(simgrid, "simgrid_version", "unknown")
    if version in UNUSABLE_SIMGRIDS and not progress_readable(simgrid):
        raise EngineError(f"SimGrid {version} ({simgrid.__file__}): {UNUSABLE_SIMGRIDS[version]}. Use the "
                          "python3-simgrid of Debian 12 or 13 or Ubuntu 24.04 (docs/systems.md), the container "
                          "image (docs/containers.md) or --engine batsim")


def run_here(spec: RunSpec, on_progress=None, on_stuck=None, signals=None):
    """Run one simulation in this process (once per process) and write its outputs.

    ``on_stuck(error)`` is called from another thread when an in-process
    scheduler neither answers nor can be interrupted (see transport.Watchdog),
    or with an ``Interrupted`` when ``signals`` (a SignalListener) gets a signal;
    by default the error is logged and the process exits.
    """
    simgrid = _import_simgrid_quietly()
    from batio.engines.embedded.sgconfig import check_sg_config
    from batio.engines.embedded.threads import use_global_futex_hash
    from batio.inputs.contention import ContentionModel
    from batio.inputs.platform import read_properties
    from batio.inputs.workload import load_workload

    read_properties(spec.platform)  # malformed XML gets a clear error before SimGrid sees it
    workloads = [load_workload(path, f"w{index}") for index, path in enumerate(spec.workloads)]
    _check_outputs_writable(Path(spec.out_prefix))
    check_sg_config(spec.sg_config)  # SimGrid would end the process on some, take others silently
    use_global_futex_hash()  # before SimGrid starts a thread per actor
    engine, platform = _load_platform(simgrid, spec)
    contention = ContentionModel.build(engine, platform)
    _check_workloads_fit(spec, platform, workloads)
    return _EmbeddedRun(spec, engine, platform, workloads, on_stuck).run(contention, on_progress, signals)


def _load_platform(simgrid, spec):
    """SimGrid's engine with the platform loaded, and the platform as Batsim numbers it."""
    from batio.inputs.platform import classify
    try:
        engine = simgrid.Engine(["batio", *(f"--cfg={option}" for option in spec.sg_config),
                                 "--cfg=host/model:ptask_L07", "--log=root.thres:critical"])
    except Exception as refusal:  # noqa: BLE001 - SimGrid's ValueError, IndexError... on a bad option
        reason = str(refusal).splitlines()[0] if str(refusal) else type(refusal).__name__
        raise InputError("--sg-cfg", f"SimGrid refuses {' '.join(spec.sg_config)}: {reason}") from None
    try:
        engine.load_platform(str(spec.platform))
    except Exception as refusal:  # SimGrid's parser raises RuntimeError with the line
        raise InputError(spec.platform, f"SimGrid cannot load this platform: {refusal}") from None
    platform = classify(spec.platform, [h.name for h in engine.all_hosts], spec.roles, spec.master_host)
    _check_platform_numbers(spec.platform, engine, platform)
    return engine, platform


def _check_workloads_fit(spec, platform, workloads):
    """Jobs wider than the platform, and storage profiles without a storage host: refused before time 0."""
    for workload in workloads:
        for job in workload.jobs:
            if job.res > len(platform.compute):
                # Batsim refuses such a workload at load time; the scheduler could only reject the job.
                raise InputError(workload.path, f"requests {job.res} hosts but the platform has only "
                                                f"{len(platform.compute)} compute hosts", job=job.id, field="res")
        if not platform.storage and any(p["type"] in ("parallel_homogeneous_pfs", "data_staging")
                                        for p in workload.profiles.values()):
            raise InputError(workload.path, f"has storage profiles but platform {spec.platform} has no "
                                            "storage host (a host with <prop id=\"role\" value=\"storage\"/>)")


class _EmbeddedRun:
    """One simulation on a loaded engine: its scheduler connected, run, and its outputs written,
    at its end or, partial, when the scheduler is stuck or a signal stops it."""

    def __init__(self, spec, engine, platform, workloads, on_stuck):
        from batio.engines.embedded.iotimeline import IoTimeline
        self.spec, self.engine, self.platform, self.workloads = spec, engine, platform, workloads
        self.prefix = Path(spec.out_prefix)
        self.on_stuck = on_stuck or _exit_on_stuck
        self.io = IoTimeline((r.name for r in platform.storage), spec.io_sample_period)
        self.sim = None
        self.transport = None
        self.scheduler_process = None
        self.started = time.perf_counter()

    def write_outputs(self, error):
        from batio.engines.embedded import outputs
        sim, prefix = self.sim, self.prefix
        assert sim is not None and self.transport is not None  # outputs follow a started simulation
        elapsed = time.perf_counter() - self.started
        self.io.finish(self.engine.clock)
        try:
            outputs.write_jobs(f"{prefix}_jobs.csv", sim.completed_order)
            outputs.write_schedule(f"{prefix}_schedule.csv", outputs.schedule_values(
                sim.completed_order, sim.machine_states, self.transport.seconds_in_scheduler, elapsed))
            outputs.write_machine_states(f"{prefix}_machine_states.csv", sim.machine_states)
            self.io.write_csv(f"{prefix}_io.csv")
            _write_run_record(self.spec, self.platform, f"{prefix}_run.json", sim, elapsed, error,
                              storage_bandwidths(self.engine, self.platform))
        except OSError as problem:  # reading an input again for its digest
            raise InputError(problem.filename, f"cannot read it again: {problem.strerror}") from None
        return elapsed

    def stuck(self, error):
        """The watchdog's last resort, from its thread: the scheduler holds the engine."""
        try:
            if self.sim is not None:  # else still loading the scheduler: no output yet
                self.write_outputs(error)
                error = _partial(error, self.prefix)
        finally:
            self.on_stuck(error)

    def _connect_scheduler(self):
        from batio.engines.embedded.scheduler_side import SchedulerProcess, load_scheduler
        from batio.engines.embedded.transport import InProcessTransport, SocketTransport, Watchdog
        spec = self.spec
        if spec.mode == "inprocess":
            watchdog = Watchdog(spec.decision_timeout_s, self.stuck)
            return InProcessTransport(load_scheduler(spec.scheduler, spec.options, watchdog), watchdog)
        self.scheduler_process = SchedulerProcess(spec, f"{self.prefix}_scheduler.log")
        return SocketTransport(self.scheduler_process.endpoint, spec.decision_timeout_s, self.scheduler_process.alive)

    def run(self, contention, on_progress, signals):
        from batio.engines.embedded.server import Config, Simulation
        from batio.engines.embedded.threads import OneCpu
        spec, engine = self.spec, self.engine
        config = Config(spec.forward_profiles, spec.dynamic_jobs, spec.acknowledge_dynamic_jobs,
                        spec.compute_sharing, spec.storage_sharing, spec.io_exclusive, spec.profile_reuse,
                        spec.max_idle_s)
        self.transport = self._connect_scheduler()
        # After the scheduler's process started (it is not the engine's to bind), before the actors' threads:
        OneCpu()
        sim = self.sim = Simulation(engine, self.platform, self.workloads, self.transport, config, self.io,
                                    on_progress, contention)
        if signals:
            signals.action = lambda signum: self.stuck(Interrupted(
                signum, f"at simulated time {engine.clock:.6f}, before the run's end", here=False))
        sim.start()
        try:
            engine.run()
            if sim.error is None and not sim.end_acknowledged:
                sim.error = EngineError(_deadlock_message(sim))
        finally:
            self.transport.close()
            if self.scheduler_process:  # told the simulation ended, it exits by itself: let it
                self.scheduler_process.stop(END_GRACE_S if sim.error is None and sim.end_acknowledged else 0.0)
        error = sim.error
        if self.scheduler_process and isinstance(error, SchedulerError):
            error = self.scheduler_process.explain(error)
        elapsed = self.write_outputs(error)
        if error is not None:
            raise _partial(error, self.prefix) from error.__cause__
        return {"prefix": str(self.prefix), "nb_compute": len(self.platform.compute), "simulated_time": engine.clock,
                "wall_time": elapsed, "bytes_read": self.io.bytes_read, "bytes_written": self.io.bytes_written,
                "jobs": len(sim.records), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _exit_on_stuck(error):
    logging.getLogger("batio").error("%s", error)
    os._exit(3)


def _partial(error, prefix):
    """The run's error, saying where the outputs written until it are."""
    if isinstance(error, Interrupted):
        return Interrupted(error.signum, f"{error.detail} (outputs until then, partial: {prefix}_jobs.csv, ...; "
                                         "out_run.json says completed: false)", here=error.here)
    if not isinstance(error, BatioError) or isinstance(error, InvalidConfiguration):
        return error  # an engine bug, reported as such by the caller; or nothing ran
    partial = type(error).from_message(f"{error} (outputs until then, partial: {prefix}_jobs.csv, ...)")
    partial.__cause__ = error.__cause__
    return partial


def _check_outputs_writable(prefix):
    """Fail before simulating, not after, when an output cannot be written."""
    try:
        prefix.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError("--out", f"cannot create folder {prefix.parent}: {error.strerror}") from None
    for suffix in OUTPUT_SUFFIXES:
        path = Path(f"{prefix}{suffix}")
        if path.is_dir():
            raise InputError("--out", f"{path} is a folder: batio writes a file there (remove the folder)")


def _check_platform_numbers(path, engine, platform):
    """A compute host of speed 0, which platform_check lets through (other hosts may have
    it) and no job could run on; SimGrid has already read every other number checked."""
    compute = {resource.name for resource in platform.compute}
    for host in engine.all_hosts:
        if host.name in compute and not host.speed > 0:
            raise InputError(path, f"host '{host.name}' has speed {host.speed:g}; a compute host's speed must be "
                                   "finite and > 0 (Batsim 4.2.1 rejects it too)", field="speed")


def _deadlock_message(sim):
    """SimGrid stopped with jobs unfinished: every actor waits for something
    that never comes (e.g. a transfer over a link that cannot carry it)."""
    running = [r.job.id for r in sim.records.values() if r.state == "RUNNING"]
    waiting = [r.job.id for r in sim.records.values() if r.state == "SUBMITTED"]
    unsubmitted = [r.job.id for r in sim.records.values() if r.state == "NOT_SUBMITTED"]

    parts = [f"{len(ids)} {what} ({listed(ids)})" for ids, what in
             ((running, "running"), (waiting, "waiting"), (unsubmitted, "not submitted yet")) if ids]
    return (f"the simulation deadlocked at t={sim.now():.6f}: SimGrid has nothing left that can progress, with "
            f"{', '.join(parts) or 'no job left'}; a job that never ends usually moves bytes over a link or "
            "computes on a host the platform gives no usable bandwidth or speed")


def storage_bandwidths(engine, platform):
    """{storage host: bytes/s of the narrowest link that every compute host's route to it
    crosses}: the capacity all jobs' writes to that host share (XML bandwidth, before any
    contention curve). None for a storage host no such link reaches, or that some compute
    host has no route to (a Floyd or Dijkstra zone declaring none: the run said so)."""
    hosts = {h.name: h for h in engine.all_hosts}
    compute = [hosts[r.name] for r in platform.compute]
    capacities: dict[str, float | None] = {}
    for storage in platform.storage:
        try:
            routes = [{link.name: link.bandwidth for link in c.route_to(hosts[storage.name])[0]} for c in compute]
        except ValueError:  # SimGrid: "No route from ..."
            capacities[storage.name] = None
            continue
        shared = set.intersection(*(set(route) for route in routes)) if routes else set()
        capacities[storage.name] = min((routes[0][name] for name in shared), default=None)
    return capacities


def _write_run_record(spec, platform, path, sim, elapsed, error, storage_bandwidth):
    simgrid = _import_simgrid_quietly()   # already loaded: the build that ran this simulation
    record = {
        "batio_version": __version__,
        "engine": "embedded",
        "simgrid_version": simgrid.simgrid_version,
        "simgrid_module": simgrid.__file__,
        "spec": asdict(spec),
        "inputs_sha256": {str(p): file_digest(p) for p in [spec.platform, *spec.workloads, spec.scheduler]},
        "nb_compute_resources": len(platform.compute),
        "nb_storage_resources": len(platform.storage),
        "storage_names": [r.name for r in platform.storage],
        "storage_bandwidth": storage_bandwidth,
        "contention_links": sorted(sim.contention.regulated) if sim.contention else [],
        "contention_bandwidth_changes": sim.contention.bandwidth_changes if sim.contention else 0,
        "completed": error is None,
        "error": None if error is None else str(error),
        "wall_time_s": elapsed,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    with writing(path) as stream:
        json.dump(record, stream, indent=1)


# -- one simulation per child process -------------------------------------------------
def _child(spec, connection, parent_pid):
    # End with the process that started this one, even if it is killed
    # (SIGKILL leaves no chance to clean up); Ctrl-C is the parent's to handle.
    die_with_parent()
    if os.getppid() != parent_pid:
        os._exit(1)
    # A session of its own, which the scheduler's children share, and the orphans of
    # daemonised ones given back: the parent ends them all with the run. A signal to
    # batio's group reaches batio only, which passes it on to stop the run (SignalListener).
    os.setsid()
    adopt_orphans()
    signals = SignalListener()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # ignored while starting (_start_shielded)

    def send(message):
        try:
            connection.send(message)
        except OSError:  # the parent is gone (a killed sweep worker): nobody to tell
            os._exit(1)

    def report(sim):
        send(("progress", (sim.now(), sim.nb_completed, len(sim.records))))

    def stuck(error):
        end_descendants()
        send(_error_payload(error))
        os._exit(3)

    try:
        # In-process, what the scheduler prints goes to its log, as the
        # scheduler process's does in socket mode; so does what SimGrid's
        # C++ side prints (a deadlock notice, a backtrace).
        log_name = "scheduler" if spec.mode == "inprocess" else "engine"
        log_path = f"{spec.out_prefix}_{log_name}.log"
        try:
            Path(spec.out_prefix).parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path, "w")
        except OSError as error:
            raise InputError("--out", f"cannot write {log_path}: {error.strerror}") from None
        with log:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                result = run_here(spec, report, stuck, signals)
        message = ("done", result)
    except BatioError as error:
        message = _error_payload(error)
    except BaseException as error:  # noqa: BLE001 - an engine bug: keep its traceback for the report
        trace = f"{spec.out_prefix}_traceback.log"
        Path(trace).write_text(traceback.format_exc())
        message = ("error", ("EngineError", f"internal engine error: {type(error).__name__}: {error} "
                                            f"(a batio bug: please report it with {trace})", ""))
    end_descendants()  # the scheduler's children: none is left once the caller hears the end
    send(message)


def _error_payload(error):
    """A BatioError as the parent rebuilds it: its nearest class the parent knows, its message, its cause."""
    if isinstance(error, Interrupted):
        return "interrupted", (error.signum, error.detail)
    known = next(cls.__name__ for cls in type(error).__mro__ if cls.__name__ in _ERRORS)
    return "error", (known, str(error), _cause_traceback(error))


def _cause_traceback(error):
    cause = error.__cause__
    if cause is None:
        return ""
    return "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))


_ERRORS = {cls.__name__: cls for cls in (OutputError, InputError, SchedulerError, EngineError, BatioError)}


def _start_shielded(child):
    """Start the engine process with Ctrl-C ignored, which it inherits: a Ctrl-C to batio's group
    while it imports (before its own session and SignalListener) would otherwise print a
    KeyboardInterrupt traceback on the terminal. This process stops it as usual (``_stopped``);
    it takes Ctrl-C again once its listener waits for it (``_child``)."""
    if threading.current_thread() is not threading.main_thread():
        child.start()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child.start()
    finally:
        signal.signal(signal.SIGINT, previous)


def simulate(spec: RunSpec, on_progress=None, wall_timeout_s=None):
    """Run ``spec`` in a child process; returns run_here's summary or raises. ``wall_timeout_s``:
    always None (the engine's record does not support it: each decision is bounded instead).

    If this process is interrupted (Ctrl-C, or SIGTERM through batio's CLI)
    the child gets the same signal, writes its partial outputs, and
    ``Interrupted`` is raised; if this process is killed, the child ends with it.
    """
    from batio.inputs.platform import read_properties
    from batio.inputs.platform_check import check_platform_xml
    read_properties(spec.platform)  # malformed XML: one line before SimGrid sees it
    check_platform_xml(spec.platform)  # values SimGrid misreads or aborts on, here so that warnings show
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(spec, sender, os.getpid()), daemon=True)
    _start_shielded(child)
    sender.close()
    answered = False
    try:
        while True:
            try:
                kind, payload = receiver.recv()
            except EOFError:
                child.join()
                answered = True
                raise _died(spec, child.exitcode) from None
            except (KeyboardInterrupt, Interrupted) as stop:
                answered = True
                raise _stopped(child, receiver, stop) from None
            if kind == "progress":
                if on_progress:
                    on_progress(*payload)
                continue
            answered = True
            if kind == "done":
                return payload
            if kind == "interrupted":  # the engine process alone got a signal
                signum, detail = payload
                raise Interrupted(signum, detail, here=False)
            name, message, cause = payload
            raised = _ERRORS.get(name, BatioError).from_message(message)
            raised.details = cause
            raise raised
    finally:
        if answered:
            child.join(10)
        if child.is_alive():
            child.kill()
            child.join()
        signal_group(child.pid, signal.SIGKILL)  # an in-process scheduler's children, in its session
        receiver.close()


# Exit statuses of an engine process that was ended from outside (the sweep
# redoes its run), not by a failure of its own (SIGABRT, SIGSEGV, an exit code).
_KILLED = {-signal.SIGKILL, *(-signum for signum in SignalListener.SIGNALS),
           *(128 + signum for signum in SignalListener.SIGNALS)}


def _died(spec, exitcode):
    """Why the engine process ended without a word."""
    if exitcode in _KILLED:
        signum = exitcode - 128 if exitcode > 0 else -exitcode
        return Interrupted(signum, f"the engine process was killed while simulating {', '.join(spec.workloads)}",
                           here=False)
    log = f"{spec.out_prefix}_{'scheduler' if spec.mode == 'inprocess' else 'engine'}.log"
    return EngineError(f"the engine process died (exit code {exitcode}) while simulating "
                       f"{', '.join(spec.workloads)} on {spec.platform}; SimGrid's last words are at the end of {log}")


def _stopped(child, receiver, stop):
    """This process was interrupted: stop the engine process, which writes its partial outputs."""
    signum = stop.signum if isinstance(stop, Interrupted) else signal.SIGINT
    with contextlib.suppress(ProcessLookupError):
        os.kill(child.pid, signum)
    answer = None
    if receiver.poll(10):
        with contextlib.suppress(EOFError):
            answer = receiver.recv()
    if answer and answer[0] == "interrupted":
        return Interrupted(signum, answer[1][1])
    return Interrupted(signum, "before the simulation started: no output")
