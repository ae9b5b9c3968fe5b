"""One simulation on the embedded engine, from inputs to output files.

SimGrid allows one engine per process, and aborts the process on some
errors, so ``simulate`` runs each simulation in a fresh child process and
turns every failure into a clear ``BatioError``; ``run_here`` is what runs
inside it. Both protocol modes give identical output files: ``inprocess``
drives the pybatsim scheduler object directly, ``socket`` runs it as
``pybatsim FILE`` behind a ZeroMQ socket.
"""

import contextlib
from dataclasses import asdict, dataclass, field
import hashlib
import json
import multiprocessing
import os
from pathlib import Path
import resource
import time
import traceback

from batio import __version__, processes
from batio.errors import BatioError, EngineError, InputError, SchedulerError

MODES = ("inprocess", "socket")


@dataclass
class RunSpec:
    platform: str
    workloads: list[str]
    scheduler: str                      # path of a pybatsim scheduler file
    out_prefix: str                     # outputs are PREFIX_jobs.csv, ...
    options: dict = field(default_factory=dict)
    mode: str = "inprocess"
    forward_profiles: bool = False
    dynamic_jobs: bool = False
    acknowledge_dynamic_jobs: bool = False
    profile_reuse: bool = False         # Batsim's --enable-profile-reuse (needs dynamic jobs)
    compute_sharing: bool = False
    storage_sharing: bool = True
    master_host: str = "master_host"
    roles: dict = field(default_factory=dict)   # host name -> role, as Batsim's -r
    port: int | None = None             # socket mode; None picks a free one
    timeout_s: float = 60.0             # socket mode: longest wait for one reply
    io_sample_period: float = 1.0       # seconds between samples of the storage throughput (_io.csv)
    io_exclusive: bool = False          # beyond Batsim: one transfer at a time per storage host (FIFO)
    sg_config: list = field(default_factory=list)  # SimGrid options OPT:VALUE, as Batsim's --sg-cfg


def _import_simgrid_quietly():
    """SimGrid prints a configuration notice on stderr when imported."""
    stderr = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            import simgrid
    finally:
        os.dup2(stderr, 2)
        os.close(stderr)
    return simgrid


def file_digest(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_scheduler(path, options):
    """Instantiate a pybatsim scheduler from its file, as `pybatsim FILE` does."""
    from batsim.tools.launcher import instanciate_scheduler
    try:
        return instanciate_scheduler(str(path), options=options)
    except SystemExit:
        raise InputError(path, "no scheduler class in this file (pybatsim expects a class named after the "
                               "file, e.g. easyBackfill.py -> EasyBackfill)") from None
    except BatioError:
        raise
    except Exception as error:
        raise SchedulerError(f"scheduler {Path(path).name} failed to start: {type(error).__name__}: {error}") from error


class _SchedulerProcess:
    """`pybatsim FILE` bound to a local port for socket mode."""

    def __init__(self, spec, log_path):
        self.endpoint = f"tcp://127.0.0.1:{processes.choose_port(spec.port)}"
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.process = processes.start_pybatsim(spec.scheduler, spec.options, self.endpoint, self._log)

    def alive(self):
        return self.process.poll() is None

    def log_tail(self, lines=15):
        with open(self.log_path) as stream:
            return "".join(stream.readlines()[-lines:])

    def stop(self):
        processes.stop(self.process)
        self._log.close()


def run_here(spec: RunSpec, on_progress=None):
    """Run one simulation in this process (once per process) and write its outputs."""
    simgrid = _import_simgrid_quietly()
    from batio.engine.iotimeline import IoTimeline
    from batio.engine import outputs
    from batio.engine.contention import ContentionModel
    from batio.engine.platform import classify, read_properties
    from batio.engine.server import Config, Simulation
    from batio.engine.transport import InProcessTransport, SocketTransport
    from batio.engine.workload import load_workload

    if spec.mode not in MODES:
        raise InputError("--mode", f"unknown mode {spec.mode!r} (known: {', '.join(MODES)})")
    if not spec.io_sample_period > 0:
        raise InputError("--io-sample-period", f"must be > 0 seconds, got {spec.io_sample_period}")
    if spec.profile_reuse and not spec.dynamic_jobs:
        raise InputError("--enable-profile-reuse", "needs --enable-dynamic-jobs (Batsim 4.2.1 refuses it alone)")
    read_properties(spec.platform)  # malformed XML gets a clear error before SimGrid sees it
    workloads = [load_workload(path, f"w{index}") for index, path in enumerate(spec.workloads)]
    prefix = Path(spec.out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)

    for option in spec.sg_config:
        if ":" not in option or option.startswith("host/model:"):
            raise InputError("--sg-cfg", f"expected a SimGrid option NAME:VALUE other than host/model, got {option!r}")
    engine = simgrid.Engine(["batio", *(f"--cfg={option}" for option in spec.sg_config),
                             "--cfg=host/model:ptask_L07", "--log=root.thres:critical"])
    try:
        engine.load_platform(str(spec.platform))
    except Exception as error:  # SimGrid's parser raises RuntimeError with the line
        raise InputError(spec.platform, f"SimGrid cannot load this platform: {error}") from None
    platform = classify(spec.platform, [h.name for h in engine.all_hosts], spec.roles, spec.master_host)
    speeds = {host.name: host.speed for host in engine.all_hosts}
    for host in platform.compute:
        if not speeds[host.name] > 0:  # NaN too
            raise InputError(spec.platform, f"host '{host.name}' is a compute host with a non-positive speed "
                                            f"({speeds[host.name]}); Batsim 4.2.1 rejects it", field="speed")
    contention = ContentionModel.build(engine, platform)
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

    scheduler_process = None
    if spec.mode == "inprocess":
        transport = InProcessTransport(load_scheduler(spec.scheduler, spec.options))
    else:
        scheduler_process = _SchedulerProcess(spec, f"{prefix}_scheduler.log")
        transport = SocketTransport(scheduler_process.endpoint, spec.timeout_s, scheduler_process.alive)

    config = Config(spec.forward_profiles, spec.dynamic_jobs, spec.acknowledge_dynamic_jobs,
                    spec.compute_sharing, spec.storage_sharing, spec.io_exclusive, spec.profile_reuse)
    io = IoTimeline((r.name for r in platform.storage), spec.io_sample_period)
    sim = Simulation(engine, platform, workloads, transport, config, io, on_progress, contention)
    started = time.perf_counter()
    sim.start()
    try:
        engine.run()
    finally:
        transport.close()
        if scheduler_process:
            scheduler_process.stop()
    elapsed = time.perf_counter() - started
    end = engine.clock
    io.finish(end)

    outputs.write_jobs(f"{prefix}_jobs.csv", sim.completed_order)
    outputs.write_schedule(f"{prefix}_schedule.csv", outputs.schedule_values(
        sim.completed_order, sim.machine_states, transport.seconds_in_scheduler, elapsed))
    outputs.write_machine_states(f"{prefix}_machine_states.csv", sim.machine_states)
    io.write_csv(f"{prefix}_io.csv")
    _write_run_record(spec, platform, f"{prefix}_run.json", sim, elapsed)
    if sim.error is not None:
        error = sim.error
        if scheduler_process and isinstance(error, SchedulerError):
            error = SchedulerError(f"{error}\n--- last lines of {scheduler_process.log_path} ---\n"
                                   f"{scheduler_process.log_tail()}")
        raise error
    return {"prefix": str(prefix), "nb_compute": len(platform.compute), "simulated_time": end,
            "wall_time": elapsed, "bytes_read": io.bytes_read, "bytes_written": io.bytes_written,
            "jobs": len(sim.records), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _write_run_record(spec, platform, path, sim, elapsed):
    record = {
        "batio_version": __version__,
        "engine": "embedded",
        "spec": asdict(spec),
        "inputs_sha256": {str(p): file_digest(p) for p in [spec.platform, *spec.workloads, spec.scheduler]},
        "nb_compute_resources": len(platform.compute),
        "nb_storage_resources": len(platform.storage),
        "storage_names": [r.name for r in platform.storage],
        "contention_links": sorted(sim.contention.regulated) if sim.contention else [],
        "contention_bandwidth_changes": sim.contention.bandwidth_changes if sim.contention else 0,
        "completed": sim.error is None,
        "error": None if sim.error is None else str(sim.error),
        "wall_time_s": elapsed,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    with open(path, "w") as stream:
        json.dump(record, stream, indent=1)


# -- one simulation per child process -------------------------------------------------
def _child(spec, connection):
    def report(sim):
        connection.send(("progress", (sim.now(), sim.nb_completed, len(sim.records))))
    try:
        Path(spec.out_prefix).parent.mkdir(parents=True, exist_ok=True)
        # In-process, what the scheduler prints goes to its log, as the
        # scheduler process's does in socket mode.
        log_name = "scheduler" if spec.mode == "inprocess" else "engine"
        with open(f"{spec.out_prefix}_{log_name}.log", "w") as log, \
                contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            result = run_here(spec, report)
        connection.send(("done", result))
    except BatioError as error:
        connection.send(("error", (type(error).__name__, str(error), _cause_traceback(error))))
    except Exception as error:  # noqa: BLE001 - an engine bug: keep its traceback for the report
        log = f"{spec.out_prefix}_traceback.log"
        Path(log).write_text(traceback.format_exc())
        connection.send(("error", ("EngineError", f"internal engine error: {type(error).__name__}: {error} "
                                   f"(a batio bug: please report it with {log})", "")))


def _cause_traceback(error):
    cause = error.__cause__
    if cause is None:
        return ""
    return "".join(traceback.format_exception(type(cause), cause, cause.__traceback__))


_ERRORS = {cls.__name__: cls for cls in (InputError, SchedulerError, EngineError, BatioError)}


def simulate(spec: RunSpec, on_progress=None):
    """Run ``spec`` in a child process; returns run_here's summary or raises."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(spec, sender), daemon=True)
    child.start()
    sender.close()
    try:
        while True:
            try:
                kind, payload = receiver.recv()
            except EOFError:
                child.join()
                raise EngineError(f"the engine process died (exit code {child.exitcode}) while simulating "
                                  f"{spec.workloads} on {spec.platform}; SimGrid may have rejected the platform "
                                  "file: check it loads with SimGrid") from None
            if kind == "progress":
                if on_progress:
                    on_progress(*payload)
            elif kind == "done":
                return payload
            else:
                name, message, cause = payload
                raised = _ERRORS.get(name, BatioError).from_message(message)
                raised.details = cause
                raise raised
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
