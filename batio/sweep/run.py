"""A sweep's runs: what one is (``PlannedRun``, named by the hash of its inputs), and running them,
each into a folder of its own made visible once complete, on Dask."""

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, replace
import hashlib
import json
import logging
import multiprocessing
import os
from pathlib import Path
import shutil
import signal
import threading
import time
import traceback
import uuid

from batio import __version__, engines
from batio.catalog import is_batsched
from batio.errors import BatioError, EngineError, InputError, Interrupted, OutputError
from batio.inputs.spec import RunSpec
from batio.names import slug
from batio.outfiles import write_text
from batio.progress import progress_bar
from batio.report import metrics

logger = logging.getLogger(__name__)

RESULT_FILE = "result.json"   # in each run folder: the run's row
# The status of a run that a signal stopped (or whose worker was lost): never a
# result, so no result.json; the next run of the same command runs it again.
INTERRUPTED = "interrupted"
RESUME_HINT = "run the same command again to redo it"
@dataclass
class PlannedRun:
    """One simulation of the grid, with everything a worker needs (paths are absolute)."""
    run_id: str
    kind: str                      # "policy", or "reference" (jobs run alone, for the I/O slowdown)
    policy: str
    platform: str
    workload: str
    seed: int | None
    engine: str
    run_options: dict
    sha256: dict                   # platform, workload, scheduler -> SHA-256 (scheduler: None for batsched)
    spec: RunSpec                  # its RunSpec (batio.resolve), but for the output prefix of the worker's folder
    reference_run: str | None = None
    scheduler_name: str = ""       # the scheduler as the user wrote it
    degraded: tuple = ()           # why the policy does not fit its inputs, when run anyway

    @property
    def scheduler(self) -> str:
        """Its scheduler file, or batsched:VARIANT."""
        return self.spec.scheduler

    @property
    def options(self) -> dict:
        """Its options as the scheduler receives them (presets included)."""
        return self.spec.options

    @property
    def platform_file(self) -> str:
        return self.spec.platform

    @property
    def workload_file(self) -> str:
        return self.spec.workloads[0]

    def identity(self):
        """The row fields that say what the run is."""
        return {"run_id": self.run_id, "kind": self.kind, "policy": self.policy, "scheduler": self.scheduler,
                "options": json.dumps(self.options, sort_keys=True), "platform": self.platform,
                "workload": self.workload, "seed": self.seed, "engine": self.engine,
                "platform_file": self.platform_file, "workload_file": self.workload_file,
                "platform_sha256": self.sha256["platform"], "workload_sha256": self.sha256["workload"],
                "scheduler_sha256": self.sha256["scheduler"], "batio_version": __version__,
                "run_dir": f"runs/{self.run_id}", "reference_run": self.reference_run,
                "scheduler_name": self.scheduler_name, "degraded": "; ".join(self.degraded)}

    @classmethod
    def planned(cls, kind: str, policy_label: str, spec: RunSpec, platform_label: str, workload_label: str,
                seed: int | None, engine: str, run_options: dict, digest: Callable[[str], str],
                reference_run: str | None = None) -> "PlannedRun":
        """The run of ``spec`` (its scheduler file resolved), named by the hashes of its inputs
        (``digest``: path -> SHA-256) and what it is; ``run_options``: as the grid gives them, with the
        policy's Batsim features."""
        scheduler, platform_file, workload_file = spec.scheduler, spec.platform, spec.workloads[0]
        sha = {"platform": digest(platform_file), "workload": digest(workload_file),
               "scheduler": None if is_batsched(scheduler) else digest(scheduler)}
        key = {"sha256": sha, "scheduler": scheduler if is_batsched(scheduler) else None, "options": spec.options,
               "engine": engine, "run_options": run_options, "batio": __version__, "kind": kind}
        return cls(_run_id(kind, policy_label, workload_label, seed, platform_label, engine, key), kind,
                   policy_label, platform_label, workload_label, seed, engine, run_options, sha, spec, reference_run)


def _run_id(kind, label, workload, seed, platform, engine, key):
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]
    seed_part = "" if seed is None else f"-s{seed}"
    return f"{slug(label, 32)}-{slug(workload, 24)}{seed_part}-{slug(platform, 24)}-{engine}-{digest}"


# -- running one simulation ----------------------------------------------------------------
def _spec(run: PlannedRun, prefix: Path) -> RunSpec:
    """The run's RunSpec, its outputs at ``prefix``."""
    return replace(run.spec, out_prefix=str(prefix))


def _publish(temporary, final):
    """Make the finished run visible in one rename (replacing a failed attempt), its record
    naming the folder it is published as."""
    _rebase_run_record(temporary / "out", final / "out")
    if final.exists():
        stale = final.with_name(f".stale-{final.name}-{uuid.uuid4().hex[:8]}")
        os.rename(final, stale)
        os.rename(temporary, final)
        shutil.rmtree(stale, ignore_errors=True)
    else:
        os.rename(temporary, final)


def _rebase_run_record(prefix, final_prefix):
    """out_run.json was written naming the temporary folder: name the final one."""
    path = Path(f"{prefix}_run.json")
    if path.exists():
        record = json.loads(path.read_text())
        record.setdefault("spec", {})["out_prefix"] = str(final_prefix)
        if record.get("error"):
            record["error"] = record["error"].replace(str(Path(prefix).parent), str(Path(final_prefix).parent))
        write_text(path, json.dumps(record, indent=1))


def execute_run(run, out):
    """Simulate one planned run into ``OUT/runs/RUN_ID``; return its row. Never raises for a
    failed simulation: the row says ``status: failed`` with the error."""
    runs_dir = Path(out) / "runs"
    final = runs_dir / run.run_id
    temporary = runs_dir / f".tmp-{run.run_id}-{uuid.uuid4().hex[:8]}"
    temporary.mkdir(parents=True)
    prefix = temporary / "out"
    row = run.identity()
    started = time.perf_counter()
    try:
        marks = {"scheduler_name": run.scheduler_name, "degraded": list(run.degraded)} if run.kind == "policy" else None
        spec = _spec(run, prefix)
        engines.run(spec, run.engine, marks=marks)
        row.update(metrics.summarize(prefix))
        row.update(status="ok", error="")
    except Interrupted as stop:
        shutil.rmtree(temporary, ignore_errors=True)  # not a result: the next sweep runs it again
        if stop.here:
            raise
        return {**row, "status": INTERRUPTED, "error": f"{stop}; {RESUME_HINT}"}
    except OutputError:
        raise  # a full disk is no result of the run: stop, and redo it on resume
    except BatioError as error:
        row.update(status="failed", error=str(error))
    except Exception as error:  # noqa: BLE001 - a bug must not stop the sweep: keep its traceback
        (temporary / "traceback.log").write_text(traceback.format_exc())
        row.update(status="failed", error=f"unexpected {type(error).__name__}: {error} "
                                          f"(traceback in {final / 'traceback.log'})")
    row["wall_time_s"] = time.perf_counter() - started
    row["error"] = row["error"].replace(str(temporary), str(final))  # it names the folder it was made in
    write_text(temporary / RESULT_FILE, json.dumps(row, indent=1, default=str))
    _publish(temporary, final)
    return row


def lost_run(run, error):
    """The row of a run whose worker died (killed, out of memory): interrupted, not
    a result of the run, so not written; the next sweep runs it again."""
    return {**run.identity(), "status": INTERRUPTED,
            "error": f"the run's worker was lost ({type(error).__name__}: {error}); {RESUME_HINT}"}


def read_result(run, out):
    path = Path(out) / "runs" / run.run_id / RESULT_FILE
    return json.loads(path.read_text()) if path.exists() else None

# -- running many, on Dask ---------------------------------------------------------------
def _worker_is_daemonic():
    return multiprocessing.current_process().daemon


@contextmanager
def _ctrl_c_ignored():
    """SIGINT ignored while the local workers start, which keep it so: Ctrl-C to the
    process group is then this process's to handle (closing the cluster), instead
    of a KeyboardInterrupt traceback from each worker."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def dask_client(workers=None, scheduler_address=None):
    """A Dask client on an existing cluster, or on a LocalCluster of ``workers`` processes."""
    import dask
    from dask.distributed import Client, LocalCluster
    cluster = None
    if scheduler_address:
        try:
            client = Client(scheduler_address, timeout="10s")
        except ValueError as error:  # not an address: Dask's own message names what it expected
            raise InputError("--scheduler-address", f"{scheduler_address!r} is not a Dask scheduler address "
                                                    f"({error}); expected e.g. tcp://10.0.0.1:8786") from None
        except (OSError, TimeoutError) as error:
            raise EngineError(f"--scheduler-address {scheduler_address}: no Dask scheduler answers ({error})") from None
        daemonic = [worker for worker, flag in client.run(_worker_is_daemonic).items() if flag]
        if daemonic:
            client.close()
            raise EngineError(f"the Dask workers at {scheduler_address} run as daemonic processes, which cannot "
                              "start the simulation processes; start them with "
                              f"DASK_DISTRIBUTED__WORKER__DAEMON=False dask worker {scheduler_address}")
    else:
        # Dask's own notices (workers closing, a comm reset when batio is
        # killed) are not the user's business: failed runs are in results.csv.
        logging.getLogger("distributed").setLevel(logging.WARNING)
        # Each simulation runs in its own child process (SimGrid allows one
        # engine per process): workers must be allowed to have children.
        with dask.config.set({"distributed.worker.daemon": False}), _ctrl_c_ignored():
            cluster = LocalCluster(n_workers=workers or os.cpu_count(), threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.CRITICAL)
        client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            _close_quietly(cluster)


def _close_quietly(cluster):
    """Close a LocalCluster without its nanny's notice of a worker it kills (after Ctrl-C: the
    worker's runs are marked interrupted, which batio says in one line)."""
    nanny = logging.getLogger("distributed.nanny")
    nanny.addFilter(_no_kill_notice)
    try:
        cluster.close()
    finally:
        nanny.removeFilter(_no_kill_notice)


def _no_kill_notice(record):
    return "still alive after" not in record.getMessage()


def run_all(runs, out, workers=None, scheduler_address=None, retry_failed=False, progress=True):
    """Run the runs not finished yet: in this process one after the other when
    ``workers == 0``, else on Dask. Returns counts: planned, ran, skipped, failed."""
    out = Path(out)
    runs_dir = out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    for leftover in list(runs_dir.glob(".tmp-*")) + list(runs_dir.glob(".stale-*")):
        shutil.rmtree(leftover, ignore_errors=True)  # from a sweep that crashed mid-run
    todo = []
    for run in runs:
        result = read_result(run, out)
        if result is None or (retry_failed and result["status"] != "ok"):
            todo.append(run)
    counts = {"planned": len(runs), "ran": len(todo), "skipped": len(runs) - len(todo), "failed": 0}
    if not todo:
        return counts
    if workers:
        workers = min(workers, len(todo))  # more would only start and sit idle
    bar = progress_bar(len(todo), progress)
    try:
        if workers == 0:
            for run in todo:
                row = execute_run(run, out)
                counts["failed"] += row["status"] == "failed"
                bar.update()
        else:
            from dask.distributed import as_completed
            with dask_client(workers, scheduler_address) as client:
                # One run in flight per worker thread, the next submitted as one
                # ends: Dask assigns all submitted tasks to workers up front and
                # does not move hour-long ones, which left a worker idle while
                # another had a queue. This also runs the grid in its order.
                waiting = iter(todo)
                futures = {}

                def submit_next(done):
                    run = next(waiting, None)
                    if run is not None:
                        future = client.submit(execute_run, run, str(out), key=f"batio-{run.run_id}", pure=False)
                        futures[future] = run
                        done.add(future)

                in_flight = as_completed()
                for _ in range(max(1, sum(client.nthreads().values()))):
                    submit_next(in_flight)
                for future in in_flight:
                    try:
                        row = future.result()
                    except OutputError:
                        raise
                    except Exception as error:  # noqa: BLE001 - a dead worker: the run is to be redone
                        row = lost_run(futures[future], error)
                    counts["failed"] += row["status"] == "failed"
                    bar.set_postfix_str(f"{counts['failed']} failed", refresh=False)
                    bar.update()
                    submit_next(in_flight)
    finally:
        bar.close()
    return counts
