"""`--engine docker` and batsched command lines, checked without a Docker engine or a batsched binary."""

import json
import os
from pathlib import Path
import sys
from types import SimpleNamespace

from conftest import TINY
import pandas as pd
import pytest
import yaml

from batio import catalog
from batio.cli import main
from batio.engines.batsim import batsched_command, start_scheduler
from batio.engines.docker import BATSIM_IMAGE, connect, container_plan, image_name, run_with_docker
from batio.errors import EngineError
from batio.inputs.spec import RunSpec

ROOT = Path(__file__).resolve().parents[1]


def demo_spec(out):
    scheduler, options = catalog.scheduler_file_and_options("easy")
    return RunSpec(str(catalog.platform_path("cluster16_pfs")), [str(catalog.workload_path("demo"))],
                   str(scheduler), str(out / "out"), options=options)


def test_no_docker_engine_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(EngineError, match=r"^--engine docker: no container engine: tried "
                                          r"unix:///nonexistent/docker.sock \(no such socket\); start Docker .* "
                                          r"--engine embedded$"):
        run_with_docker(demo_spec(tmp_path))
    code = main(["run", "--platform", "cluster16_pfs", "--workload", "demo", "--scheduler", "easy",
                 "--engine", "docker", "--out", str(tmp_path / "run"), "--quiet"])
    error = capsys.readouterr().err
    assert code == 2 and "no container engine" in error and len(error.strip().splitlines()) == 1


def test_without_docker_host_every_usual_socket_is_tried(monkeypatch):
    monkeypatch.setattr("batio.engines.docker.DEFAULT_SOCKETS", ("unix:///nonexistent/a.sock", "unix:///nonexistent/b.sock"))
    with pytest.raises(EngineError, match=r"tried unix:///nonexistent/a.sock \(no such socket\), "
                                          r"unix:///nonexistent/b.sock \(no such socket\);"):
        connect({})


def test_the_image_is_the_one_docker_compose_builds():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    # BATIO_IMAGE overrides it in both.
    assert compose["services"]["batsim"]["image"] == f"${{BATIO_IMAGE:-{BATSIM_IMAGE}}}"
    assert image_name({}) == BATSIM_IMAGE and image_name({"BATIO_IMAGE": "mine:1"}) == "mine:1"


def test_container_mounts_inputs_read_only_and_writes_outputs_to_the_out_folder(tmp_path):
    spec = demo_spec(tmp_path)
    spec.master_host, spec.roles = "master_host0", {"pfs0": "storage"}
    command, mounts = container_plan(spec, "tcp://127.0.0.1:28123")
    assert command == ["batsim", "-p", "/batio/inputs/0/cluster16_pfs.xml", "-e", "/batio/outputs/out",
                       "-s", "tcp://127.0.0.1:28123", "-m", "master_host0", "-w", "/batio/inputs/1/demo.json",
                       "-r", "pfs0:storage"]
    assert [(m["Target"], m["Source"], m["ReadOnly"]) for m in mounts] == [
        ("/batio/inputs/0/cluster16_pfs.xml", str(Path(spec.platform).resolve()), True),
        ("/batio/inputs/1/demo.json", str(Path(spec.workloads[0]).resolve()), True),
        ("/batio/outputs", str(tmp_path.resolve()), False)]


def test_batsched_command_lines():
    assert batsched_command("batsched:easy_bf", {}, "tcp://127.0.0.1:28000") == [
        "batsched", "--variant", "easy_bf", "--socket-endpoint", "tcp://127.0.0.1:28000",
        "--verbosity", "quiet", "--variant_options", "{}"]
    assert batsched_command("batsched:conservative_bf",
                            {"queue_order": "asc_walltime", "policy": "contiguous", "verbosity": "info",
                             "dump_prefix": "/tmp/d"}, "tcp://127.0.0.1:1") == [
        "batsched", "--variant", "conservative_bf", "--socket-endpoint", "tcp://127.0.0.1:1",
        "--verbosity", "info", "--queue_order", "asc_walltime", "--policy", "contiguous",
        "--variant_options", '{"dump_prefix": "/tmp/d"}']
    with pytest.raises(EngineError, match="expected batsched:VARIANT"):
        batsched_command("batsched:", {}, "tcp://127.0.0.1:1")


def test_batsched_needs_its_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    spec = RunSpec(str(TINY), [], "batsched:easy_bf", str(tmp_path / "out"))
    with pytest.raises(EngineError, match="batsched:easy_bf needs a `batsched` binary on PATH"):
        start_scheduler(spec, "tcp://127.0.0.1:1", None)


class FakeDocker:
    """Just enough of docker.DockerClient: a Batsim container that exits with ``code``."""

    def __init__(self, code):
        self.code = code
        self.started = []
        self.container: SimpleNamespace  # the last one run
        self.images = SimpleNamespace(get=lambda image: None)
        self.containers = SimpleNamespace(run=self.run)

    def run(self, image, command, **options):
        self.started.append((image, command, options))
        self.container = SimpleNamespace(wait=lambda timeout=None: {"StatusCode": self.code},
                                         logs=lambda: b"[batsim] cannot read the platform\n",
                                         remove=lambda force=False: setattr(self.container, "removed", force))
        return self.container


def test_batsim_container_failure_is_reported_with_its_log_and_recorded(tmp_path):
    docker = FakeDocker(code=3)
    spec = demo_spec(tmp_path)
    with pytest.raises(EngineError, match=r"batsim exited with code 3; see .*out_batsim.log"):
        run_with_docker(spec, client=docker)
    (image, command, options), = docker.started
    assert image == BATSIM_IMAGE and options["network_mode"] == "host" and options["detach"]
    assert options["user"] == f"{os.getuid()}:{os.getgid()}" and docker.container.removed
    endpoint = command[command.index("-s") + 1]
    assert endpoint.startswith("tcp://127.0.0.1:")
    assert (tmp_path / "out_batsim.log").read_text() == "[batsim] cannot read the platform\n"
    record = json.loads((tmp_path / "out_run.json").read_text())
    assert record["engine"] == "docker" and record["batsim_image"] == BATSIM_IMAGE
    assert record["completed"] is False and "code 3" in record["error"]
    assert record["spec"]["options"] == {"backfill_max": 1} and record["batio_version"]
    assert set(record["inputs_sha256"]) == {spec.platform, spec.workloads[0], spec.scheduler}
    assert record["nb_compute_resources"] == 16


FAKE_BATSCHED = '''#!{python}
# Stand-in for batsched: logs its command line, binds its endpoint, exits after one connection.
import json, socket, sys
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv) + "\\n")
endpoint = sys.argv[sys.argv.index("--socket-endpoint") + 1]
host, port = endpoint.split("//")[1].rsplit(":", 1)
server = socket.create_server((host, int(port)))
server.accept()[0].close()
'''

FAKE_BATSIM = '''#!{python}
# Stand-in for batsim: logs its command line and writes Batsim's output files for two jobs on 4 hosts.
import json, sys
with open({log!r}, "a") as log:
    log.write(json.dumps(sys.argv) + "\\n")
prefix = sys.argv[sys.argv.index("-e") + 1]
with open(prefix + "_jobs.csv", "w") as jobs:
    jobs.write("job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,"
               "success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,"
               "stretch,allocated_resources,consumed_energy,metadata\\n"
               "1,w0,d,0,2,100,1,COMPLETED_SUCCESSFULLY,0,20,20,0,20,1,0-1,-1,\\"\\"\\n"
               "2,w0,d,1,4,100,1,COMPLETED_SUCCESSFULLY,20,20,40,19,39,1.95,0-3,-1,\\"\\"\\n")
with open(prefix + "_machine_states.csv", "w") as states:
    states.write("time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\\n"
                 "0,0,0,0,2,2\\n20,0,0,0,0,4\\n40,0,0,0,4,0\\n")
'''


def test_batsched_against_a_batsim_binary_with_stand_ins(tmp_path, monkeypatch):
    """compare --engine batsim with a batsched variant, on stand-in binaries: the command lines
    batio runs, the run record, and a report without _io.csv."""
    bin_dir, log = tmp_path / "bin", tmp_path / "commands.jsonl"
    bin_dir.mkdir()
    for name, script in (("batsched", FAKE_BATSCHED), ("batsim", FAKE_BATSIM)):
        (bin_dir / name).write_text(script.format(python=sys.executable, log=str(log)))
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    workload = tmp_path / "w.json"
    workload.write_text('{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "d"},'
                        '{"id": 2, "subtime": 1, "walltime": 100, "res": 4, "profile": "d"}],'
                        '"profiles": {"d": {"type": "delay", "delay": 20}}}')
    code = main(["compare", "--platform", str(TINY), "--workload", str(workload), "--engine", "batsim",
                 "--schedulers", "batsched:conservative_bf", "--no-io-slowdown", "--quiet",
                 "--options-of", 'batsched:conservative_bf={"queue_order": "asc_size"}', "--out", str(tmp_path / "o")])
    assert code == 0
    batsched, batsim = [json.loads(line) for line in log.read_text().splitlines()]
    endpoint = batsched[batsched.index("--socket-endpoint") + 1]
    assert batsched[1:] == ["--variant", "conservative_bf", "--socket-endpoint", endpoint, "--verbosity", "quiet",
                            "--queue_order", "asc_size", "--variant_options", "{}"]
    assert batsim[1:3] == ["-p", str(TINY)] and batsim[batsim.index("-s") + 1] == endpoint
    assert batsim[batsim.index("-w") + 1] == str(workload.resolve())
    row = pd.read_csv(tmp_path / "o" / "results.csv").iloc[0]
    assert row["status"] == "ok" and row["makespan"] == 40 and row["utilisation"] == pytest.approx(120 / 160)
    assert row["scheduler"] == "batsched:conservative_bf" and pd.isna(row["bytes_moved"])
    record = json.loads((tmp_path / "o" / row["run_dir"] / "out_run.json").read_text())
    assert record["engine"] == "batsim" and record["completed"] and record["nb_compute_resources"] == 4
    assert record["spec"]["options"] == {"queue_order": "asc_size"}
    assert (tmp_path / "o" / "report" / "figures" / "gantt-batsched_conservative_bf.png").exists()


def test_an_image_not_built_here_is_a_clear_error(tmp_path):
    import docker
    client = FakeDocker(code=0)
    client.images = SimpleNamespace(get=lambda image: (_ for _ in ()).throw(docker.errors.ImageNotFound(image)))
    with pytest.raises(EngineError, match=rf"^--engine docker: no image {BATSIM_IMAGE}; build it with "
                                          r"`docker compose build`"):
        run_with_docker(demo_spec(tmp_path), client=client)
    assert client.started == []
