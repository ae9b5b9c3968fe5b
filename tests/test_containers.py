"""docker-compose.yml run for real, with every compose tool found here, on the host network
(docker-compose.host.yml). Skipped, with the reason, without a container engine that has the
image (`docker compose build`, docs/containers.md). The outputs must be byte-identical to
`batio run --engine batsim` with a Batsim 4.2.1 binary on the host's PATH."""

import json
import os
from pathlib import Path
import shutil
import subprocess
import tempfile

import pandas as pd
import pytest

from batio import catalog
from batio.cli import main
from batio.compose import run_arguments
from batio.compose import settings as compose_settings
from batio.engines.docker import image_name
from batio.engines.processes import free_port
from batio.image_check import RECORD, stale_image_error

ROOT = Path(__file__).resolve().parents[1]
FILES = ["-f", str(ROOT / "docker-compose.yml"), "-f", str(ROOT / "docker-compose.host.yml")]
OUT = Path("out") / "test-containers"  # under ROOT: the services mount the project folder
# Other checkouts on the same machine may run these tests at the same time, on the same engine and
# the host network: their own compose project (container names) and free ports, or `down` of one
# removes the other's containers.
PROJECT = f"batio-test-{os.getpid()}"


def _works(command, **options):
    try:
        return subprocess.run(command, capture_output=True, timeout=60, **options).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _docker_api_answers():
    from batio.engines.docker import connect
    try:
        connect()
        return True
    except Exception:
        return False


def compose_tools():
    """Compose tools whose engine has the image: (name, command prefix, environment)."""
    image = image_name()
    tools: list[tuple[str, list[str], dict]] = []
    if shutil.which("podman") and _works(["podman", "image", "exists", image]) and shutil.which("podman-compose"):
        tools.append(("podman-compose", ["podman-compose"], {}))
    if shutil.which("docker") and _docker_api_answers():
        socket = {} if os.environ.get("DOCKER_HOST") else {"DOCKER_HOST": _first_answering_socket()}
        if not _works(["docker", "image", "inspect", image], env={**os.environ, **socket}):
            return tools
        if _works(["docker", "compose", "version"], env={**os.environ, **socket}):
            tools.append(("docker compose", ["docker", "compose"], socket))
        if shutil.which("docker-compose"):
            tools.append(("docker-compose", ["docker-compose"], socket))
    return tools


def _first_answering_socket():
    from batio.engines.docker import DEFAULT_SOCKETS
    return next(where for where in DEFAULT_SOCKETS
                if _works(["docker", "info"], env={**os.environ, "DOCKER_HOST": where}))


def run_image(tool, *command, options=()):
    """`podman run` or `docker run` of the image, on the host network, by the engine behind a compose tool."""
    name, _, socket = tool
    engine = ["podman"] if name == "podman-compose" else ["docker"]
    return subprocess.run(engine + ["run", "--rm", "--network", "host", *options, image_name(), *command],
                          env={**os.environ, **socket}, capture_output=True, text=True, timeout=600)


def stale_image(tool):
    """batio/image_check.py's line when the image cannot run this checkout (built from another
    pyproject.toml, or before images recorded which), else None."""
    record = run_image(tool, "cat", str(RECORD))
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / RECORD.name
        if record.returncode == 0:
            copy.write_text(record.stdout)
        error = stale_image_error(copy, ROOT / "pyproject.toml", image_name())
        return error and error.replace(str(copy), str(RECORD))


TOOLS = compose_tools()
NO_ENGINE = (f"no container engine with the image {image_name()} and a compose tool "
             "(podman-compose, docker compose, docker-compose): see docs/containers.md")
NO_BATSIM = "needs a `batsim` binary (Batsim 4.2.1) on PATH for the reference runs"
pytestmark = pytest.mark.skipif(not TOOLS, reason=NO_ENGINE)
# The services run this checkout's code with the image's packages: a stale image refuses (tested below).
STALE = stale_image(TOOLS[0]) if TOOLS else None
needs_this_checkouts_image = pytest.mark.skipif(STALE is not None, reason=f"the services refuse: {STALE}")
TOOL_IDS = [name for name, _, _ in TOOLS]

# The demo, and one input per paper: the bundled inputs (catalog.BUNDLED_INPUTS) of the
# paper's policy whose Batsim run is the shortest (docs/parity.md).
PAPERS_POLICIES = ("io_aware", "iopack", "equilibrio-listing", "catios-greedy", "locality-fcfs")
CASES = [("easy", "cluster16_pfs", "demo")] + [(name, *catalog.bundled_inputs(name)) for name in PAPERS_POLICIES]


def compose(tool, *arguments, timeout=3600, **settings):
    """Run `TOOL -f ... ARGUMENTS` in the project folder with the compose settings; the completed process."""
    _, prefix, environ = tool
    environ = {**os.environ, **environ, "PORT": str(free_port()), **settings}
    return subprocess.run(prefix + FILES + ["-p", PROJECT] + list(arguments), cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=timeout)


def up(tool, **settings):
    """`up` of Batsim and the scheduler; the folder of the outputs."""
    name = "-".join(filter(None, [settings["SCHEDULER"].replace(":", "_"), Path(settings.get("PLATFORM", "")).stem]))
    out = OUT / tool[0].replace(" ", "-") / name
    shutil.rmtree(ROOT / out, ignore_errors=True)
    run = compose(tool, "up", "--exit-code-from", "batsim", "batsim", "scheduler", OUT=str(out), **settings)
    compose(tool, "down")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return ROOT / out


def reference(tmp_path, scheduler, platform, workload):
    """out_jobs.csv of `batio run --engine batsim` on the host."""
    if shutil.which("batsim") is None:
        pytest.skip(NO_BATSIM)
    if catalog.is_batsched(scheduler) and shutil.which("batsched") is None:
        pytest.skip("needs a `batsched` binary on PATH for the reference run")
    assert main(["run", "--platform", platform, "--workload", workload, "--scheduler", scheduler,
                 "--engine", "batsim", "--out", str(tmp_path / "reference"), "--quiet"]) == 0
    return (tmp_path / "reference" / "out_jobs.csv").read_bytes()


@pytest.mark.parametrize("tool", TOOLS, ids=TOOL_IDS)
@needs_this_checkouts_image
def test_batio_scheduler_against_batsim_matches_batsim_on_the_host(tool, tmp_path):
    out = up(tool, SCHEDULER="easy")
    assert (out / "out_jobs.csv").read_bytes() == reference(tmp_path, "easy", "cluster16_pfs", "demo")


@pytest.mark.parametrize("scheduler, platform, workload", CASES[1:], ids=[case[0] for case in CASES[1:]])
@needs_this_checkouts_image
def test_each_papers_input_matches_batsim_on_the_host(scheduler, platform, workload, tmp_path):
    out = up(TOOLS[0], SCHEDULER=scheduler, PLATFORM=platform, WORKLOAD=workload)
    assert (out / "out_jobs.csv").read_bytes() == reference(tmp_path, scheduler, platform, workload)


@pytest.mark.parametrize("tool", TOOLS, ids=TOOL_IDS)
@needs_this_checkouts_image
def test_batsched_against_batsim(tool, tmp_path):
    out = up(tool, SCHEDULER="batsched:easy_bf")
    jobs = pd.read_csv(out / "out_jobs.csv")
    assert len(jobs) == len(pd.read_csv(up(tool, SCHEDULER="easy") / "out_jobs.csv"))
    assert (jobs["final_state"] == "COMPLETED_SUCCESSFULLY").all()
    if shutil.which("batsched"):
        assert (out / "out_jobs.csv").read_bytes() == reference(tmp_path, "batsched:easy_bf", "cluster16_pfs", "demo")


@needs_this_checkouts_image
def test_another_platform_file(tmp_path):
    """PLATFORM=a platform file the user wrote in the project folder: 32 slower nodes, a slower file system."""
    platform = OUT / "cluster32.xml"
    (ROOT / OUT).mkdir(parents=True, exist_ok=True)
    assert main(["platform", "--nodes", "32", "--speed", "500Mf", "--node-link", "10GBps",
                 "--pfs-bandwidth", "2GBps", "--out", str(ROOT / platform)]) == 0
    out = up(TOOLS[0], SCHEDULER="easy", PLATFORM=str(platform))
    swapped = (out / "out_jobs.csv").read_bytes()
    assert swapped == reference(tmp_path, "easy", str(ROOT / platform), "demo")
    assert swapped != (up(TOOLS[0], SCHEDULER="easy") / "out_jobs.csv").read_bytes()


@needs_this_checkouts_image
def test_comparison_in_containers_writes_batio_compares_report(tmp_path):
    out = OUT / "compare"
    shutil.rmtree(ROOT / out, ignore_errors=True)
    run = compose(TOOLS[0], "--profile", "compare", "run", "--rm", "compare",
                  SCHEDULERS="easy,conservative,batsched:easy_bf", COMPARE_OUT=str(out),
                  COMPARE_ARGS="--no-io-slowdown")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = pd.read_csv(ROOT / out / "results.csv")
    assert list(results["policy"]) == ["easy", "conservative", "batsched:easy_bf"]
    assert (results["status"] == "ok").all() and (results["engine"] == "batsim").all()
    assert (ROOT / out / "report" / "report.md").is_file()
    # Paths the user can open from the project folder on the host, not the container's /batio/...
    assert f"results: {out}/results.csv" in run.stdout.splitlines() and "/batio/" not in run.stdout
    if shutil.which("batsim"):  # the same runs on the host: the same jobs' times
        assert main(["compare", "--platform", "cluster16_pfs", "--workload", "demo", "--engine", "batsim",
                     "--schedulers", "easy,conservative", "--no-io-slowdown", "--quiet",
                     "--out", str(tmp_path / "host")]) == 0
        for row in pd.read_csv(tmp_path / "host" / "results.csv").itertuples():
            inside = ROOT / out / results.set_index("policy").loc[row.policy, "run_dir"] / "out_jobs.csv"
            assert inside.read_bytes() == (tmp_path / "host" / row.run_dir / "out_jobs.csv").read_bytes()


def broken_workload():
    """A workload file in the project folder (the services see it) that is not JSON."""
    path = OUT / "broken.json"
    (ROOT / OUT).mkdir(parents=True, exist_ok=True)
    (ROOT / path).write_text("jobs: none, this is not JSON\n")
    return str(path)


def refusal(tool, out, **settings):
    """`up` of both services that must refuse: its output and exit status, checked to be one line
    in all, the CLI's line for the same settings, before Batsim started."""
    run = compose(tool, "up", "--exit-code-from", "batsim", "batsim", "scheduler", OUT=str(out), **settings)
    compose(tool, "down")
    said = run.stdout + run.stderr
    lines = [line for line in said.splitlines() if "batio: error: " in line]
    assert run.returncode == 2 and len(lines) == 1, said[-3000:]
    assert "Traceback" not in said and "out_batsim.log" not in said
    return lines[0]


@pytest.mark.parametrize("settings", [
    {"PLATFORM": "platforms/no_such.xml"},
    {"SCHEDULER": "no_such_scheduler"},
    {"WORKLOAD": "broken"},
    {"SCHEDULER": "adaptive", "PLATFORM": "kth_sp2", "WORKLOAD": "kth_sp2_first300"},
    {"RUN_ARGS": "--io-exclusive"},
], ids=["platform", "scheduler", "workload-not-json", "unfit", "io-exclusive"])
@needs_this_checkouts_image
def test_bad_input_is_the_clis_one_line_and_exit_2_in_containers(settings, capsys, monkeypatch):
    """One line in all (the batsim service's; the scheduler service stays quiet), as `batio run`."""
    monkeypatch.chdir(ROOT)  # relative paths name the same files inside (/batio) and here
    if settings.get("WORKLOAD") == "broken":
        settings = {**settings, "WORKLOAD": broken_workload()}
    out = OUT / "refused"
    line = refusal(TOOLS[0], out, **{"SCHEDULER": "easy", **settings})
    # The same settings as `batio run` on the host (its command line as batio.compose builds it).
    command = run_arguments(compose_settings({"SCHEDULER": "easy", **settings, "OUT": str(out)}))
    assert main(command) == 2
    assert line.split("batio: error: ", 1)[1] == capsys.readouterr().err.split("batio: error: ", 1)[1].strip()
    assert not (ROOT / out).exists()


@needs_this_checkouts_image
def test_a_used_out_is_refused_and_forced_replaces_it():
    out = up(TOOLS[0], SCHEDULER="easy")
    first = (out / "out_jobs.csv").read_bytes()
    line = refusal(TOOLS[0], out.relative_to(ROOT), SCHEDULER="easy")
    assert "is not empty" in line and "--force" in line
    (out / "out_jobs.csv").write_bytes(b"an earlier run's jobs\n")
    run = compose(TOOLS[0], "up", "--exit-code-from", "batsim", "batsim", "scheduler",
                  OUT=str(out.relative_to(ROOT)), SCHEDULER="easy", RUN_ARGS="--force")
    compose(TOOLS[0], "down")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (out / "out_jobs.csv").read_bytes() == first


@needs_this_checkouts_image
def test_unfit_policy_under_allow_unfit_is_degraded_as_batio_run(tmp_path, capsys):
    settings = {"SCHEDULER": "adaptive", "PLATFORM": "kth_sp2", "WORKLOAD": "kth_sp2_first300"}
    out = OUT / "adaptive-degraded"
    shutil.rmtree(ROOT / out, ignore_errors=True)
    run = compose(TOOLS[0], "up", "--exit-code-from", "batsim", "batsim", "scheduler", OUT=str(out),
                  RUN_ARGS="--allow-unfit", **settings)
    compose(TOOLS[0], "down")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    said = run.stdout + run.stderr
    assert said.count("DEGRADED: adaptive does not fit these inputs") == 1
    assert said.count("adaptive does not fit these inputs, run anyway (degraded)") == 1  # the warning, once
    record = json.loads((ROOT / out / "out_run.json").read_text())
    assert record["degraded"] and record["completed"]
    if shutil.which("batsim"):
        assert main(["run", "--platform", "kth_sp2", "--workload", "kth_sp2_first300", "--scheduler", "adaptive",
                     "--engine", "batsim", "--allow-unfit", "--quiet", "--out", str(tmp_path / "cli")]) == 0
        assert (ROOT / out / "out_jobs.csv").read_bytes() == (tmp_path / "cli" / "out_jobs.csv").read_bytes()
        assert json.loads((tmp_path / "cli" / "out_run.json").read_text())["degraded"] == record["degraded"]


def test_an_image_built_from_another_pyproject_is_one_line_and_exit_2(tmp_path):
    """The checkout's pyproject.toml edited after the image was built: the services' entry point and
    the compare service's check say to rebuild, in one line (an image built before it recorded its
    pyproject.toml: that it has no record)."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "batio", checkout / "batio", ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + "# edited after the build\n")
    options = ["-v", f"{checkout}:/batio", "-w", "/batio", "-e", f"BATIO_CONTAINER_IMAGE={image_name()}"]
    said = (f"records no hash of the pyproject.toml it was built from ({RECORD})" if STALE and "no hash" in STALE
            else "was built from another pyproject.toml than /batio/pyproject.toml")
    # The batsim service: the scheduler service says it only when alone, after batio.compose.QUIET_WAIT_S.
    for command in (["python", "-m", "batio.compose", "batsim"], ["python", "-m", "batio.image_check"]):
        run = run_image(TOOLS[0], *command, options=options)
        lines = (run.stdout + run.stderr).strip().splitlines()
        assert run.returncode == 2 and len(lines) == 1, run.stdout + run.stderr
        assert lines[0].startswith(f"batio: error: image {image_name()} {said}") and "rebuild it" in lines[0]


@pytest.mark.skipif(not _docker_api_answers(), reason="no Docker API (Docker, or `podman system service`)")
def test_engine_docker_uses_the_same_image(tmp_path):
    assert main(["run", "--platform", "cluster16_pfs", "--workload", "demo", "--scheduler", "easy",
                 "--engine", "docker", "--out", str(tmp_path / "docker"), "--quiet"]) == 0
    assert (tmp_path / "docker" / "out_jobs.csv").read_bytes() == reference(tmp_path, "easy", "cluster16_pfs", "demo")
