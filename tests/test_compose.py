"""docker-compose.yml, its host-network override and the services' entry point (batio.compose),
checked without a container engine; tests/test_containers.py runs them in containers."""

import hashlib
import json
import os
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import time

from conftest import found
import pytest
import yaml

from batio import cli
from batio.compose import DEFAULTS, QUIET_WAIT_S, main, run_arguments, serve, settings
from batio.engines.batsim import batsim_command

ROOT = Path(__file__).resolve().parents[1]


def compose_file(name="docker-compose.yml"):
    return yaml.safe_load((ROOT / name).read_text())


def test_services_start_in_order_without_health_checks_or_registry_images():
    services = compose_file()["services"]
    # Health checks never run without systemd (Podman here): ordering is start order only.
    assert all("healthcheck" not in service for service in services.values())
    assert services["batsim"]["depends_on"] == ["scheduler"]
    assert services["scheduler"]["environment"]["SCHEDULER_HOST"] == "scheduler"
    # One image, built here: no registry holds it.
    assert {service["image"] for service in services.values()} == {"${BATIO_IMAGE:-batio-batsim:4.2.1}"}
    assert all(service["build"] == "." for service in services.values())
    for name in ("scheduler", "batsim"):
        assert services[name]["command"] == ["python", "-m", "batio.compose", name]


def test_host_override_puts_every_service_on_the_host_network():
    services, override = compose_file()["services"], compose_file("docker-compose.host.yml")["services"]
    assert set(override) == set(services)
    assert all(service["network_mode"] == "host" for service in override.values())
    assert override["batsim"]["environment"] == {"SCHEDULER_HOST": "127.0.0.1"}


def test_compare_service_runs_batio_compare_on_batsim():
    compare = compose_file()["services"]["compare"]
    assert compare["profiles"] == ["compare"]
    command = compare["command"][-1]
    # The image check first: `batio compare` imports every dependency before it could say why one is missing.
    assert command.startswith("python -m batio.image_check && exec batio compare --engine batsim ")
    assert '--schedulers "$$SCHEDULERS"' in command


def test_every_service_names_its_image_for_the_image_check():
    """batio/image_check.py refuses an image built from another pyproject.toml, and one built before
    it recorded which: it knows it runs in the image (and which) by this variable."""
    for service in compose_file()["services"].values():
        assert service["environment"]["BATIO_CONTAINER_IMAGE"] == service["image"]


def test_dockerfile_builds_from_debian_and_pins_batsim_4_2_1():
    dockerfile = (ROOT / "Dockerfile").read_text()
    froms = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("FROM ")]
    assert froms == ["debian:bookworm", "debian:bookworm", "batsim"]
    versions = dict(line.split("=", 1) for line in (ROOT / "containers/versions.env").read_text().splitlines()
                    if line and not line.startswith("#"))
    assert versions["BATSIM_REV"] == "v4.2.1"
    assert versions["BATSCHED_REV"] == "17072778995100fc90214ea4910bf5b171adfd0d"  # Batsim 4.2.1's default.nix


def test_dockerfile_header_versions_and_compose_name_the_same_image_and_stages():
    """The Dockerfile's header describes what the files have: its stages, no build arguments, the
    image name compose, --engine docker and the image check use; versions.env says it is read
    by build.sh, not passed as build arguments."""
    from batio.engines.docker import BATSIM_IMAGE
    from batio.image_check import DEFAULT_IMAGE
    dockerfile = (ROOT / "Dockerfile").read_text()
    header = [line for line in dockerfile.splitlines() if line.startswith("#")][:16]
    stages = [line.split()[-1] for line in dockerfile.splitlines() if line.startswith("FROM ")]
    assert stages == ["build", "batsim", "batio"]
    assert all(any(line.startswith(f"#   {stage} ") for line in header) for stage in stages)
    assert not any(line.startswith("ARG ") for line in dockerfile.splitlines())
    assert "No build arguments" in "\n".join(header)
    image = compose_file()["services"]["batsim"]["image"]
    assert image == f"${{BATIO_IMAGE:-{BATSIM_IMAGE}}}" and BATSIM_IMAGE == DEFAULT_IMAGE
    assert f"podman build -t {BATSIM_IMAGE} ." in "\n".join(header)
    versions = (ROOT / "containers/versions.env").read_text()
    assert "Not build arguments" in versions
    pins = dict(line.split("=", 1) for line in versions.splitlines() if line and not line.startswith("#"))
    build = (ROOT / "containers/build.sh").read_text()
    assert all(f"${name}" in build for name in pins)  # every pin is checked in the build


def test_defaults_and_empty_values():
    assert settings({}) == DEFAULTS
    assert settings({"OPTIONS": "", "SCHEDULER": "conservative"})["OPTIONS"] == "{}"
    assert settings({"SCHEDULER": "conservative"})["SCHEDULER"] == "conservative"


def test_batsim_gets_the_command_line_of_batio_run(tmp_path):
    """Byte-identical outputs need the same flags as `batio run --engine batsim` (roles, master host...)."""
    values = settings({"PLATFORM": "stria15_lustre", "WORKLOAD": "stria_w2", "SCHEDULER": "adaptive",
                       "OUT": str(tmp_path), "RUN_ARGS": "--sg-cfg maxmin/precision:1e-9"})
    compose_spec = cli.resolved_run(cli.parser().parse_args(run_arguments(values))).spec
    by_hand = cli.resolved_run(cli.parser().parse_args(
        ["run", "--platform", "stria15_lustre", "--workload", "stria_w2", "--scheduler", "adaptive", "--out",
         str(tmp_path), "--engine", "batsim", "--sg-cfg", "maxmin/precision:1e-9"])).spec
    assert batsim_command(compose_spec, "tcp://h:1") == batsim_command(by_hand, "tcp://h:1")
    assert "--sg-cfg" in batsim_command(compose_spec, "tcp://h:1")


def cli_error(argv, capsys):
    """What `batio ARGV` says on standard error, and its exit status."""
    code = cli.main(argv)
    return capsys.readouterr().err, code


def run_argv(environ, out):
    """The `batio run` command line of the compose settings ``environ`` (the CLI's way in)."""
    return run_arguments(settings({**environ, "OUT": str(out)}))


BAD_INPUTS = {
    "no platform file": {"PLATFORM": "platforms/no_such.xml"},
    "unknown scheduler": {"SCHEDULER": "no_such_scheduler"},
    "options not JSON": {"OPTIONS": "{not json"},
    "workload not JSON": {"WORKLOAD": "NOT_JSON"},
    "platform not XML": {"PLATFORM": "NOT_JSON"},
    "unfit policy": {"SCHEDULER": "adaptive", "PLATFORM": "kth_sp2", "WORKLOAD": "kth_sp2_first300"},
    "option Batsim ignores": {"RUN_ARGS": "--io-exclusive"},
    "port out of range": {"RUN_ARGS": "--port 70000"},
}


def _bad_input(case, tmp_path):
    """The settings of a bad-input case, with its non-JSON file written (a JSON workload or XML platform
    that is neither)."""
    broken = tmp_path / "broken.json"
    broken.write_text("jobs: none, this is not JSON\n")
    return {key: str(broken) if value == "NOT_JSON" else value for key, value in BAD_INPUTS[case].items()}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_batsim_service_refuses_bad_input_with_the_clis_one_line(case, tmp_path, capsys):
    """The same checks as `batio run --engine batsim`, by the same code: the same line, before Batsim
    starts (no output folder is made, so nothing of a run is written)."""
    environ = _bad_input(case, tmp_path)
    expected, code = cli_error(run_argv(environ, tmp_path / "cli"), capsys)
    assert code == 2 and expected.startswith("batio: error: ") and len(expected.splitlines()) == 1
    assert main(["batsim"], environ={**environ, "OUT": str(tmp_path / "cli")}) == 2
    captured = capsys.readouterr()
    assert captured.err == expected and captured.out == ""
    assert not (tmp_path / "cli").exists()


def test_unknown_flag_in_run_args_is_argparses_usage_as_in_the_cli(tmp_path, capsys):
    with pytest.raises(SystemExit) as cli_exit:
        cli.main(run_argv({"RUN_ARGS": "--no-such-flag"}, tmp_path))
    expected = capsys.readouterr().err
    with pytest.raises(SystemExit) as service_exit:
        main(["batsim"], environ={"RUN_ARGS": "--no-such-flag", "OUT": str(tmp_path)})
    assert service_exit.value.code == cli_exit.value.code == 2
    assert capsys.readouterr().err == expected and "--no-such-flag" in expected


@pytest.mark.parametrize("case", ["no platform file", "workload not JSON", "unfit policy", "option Batsim ignores"])
def test_scheduler_service_waits_quietly_for_batsims_line(case, tmp_path, capsys, monkeypatch):
    """One line in all under `up --exit-code-from batsim`: the batsim service says it, compose then
    stops the scheduler service, which has said nothing. Alone, it says the same line once it has waited."""
    environ = {**_bad_input(case, tmp_path), "OUT": str(tmp_path / "out")}
    main(["batsim"], environ=environ)
    batsims_line = capsys.readouterr().err
    waited = []

    def wait(seconds):
        waited.append(seconds)
        assert capsys.readouterr() == ("", "")  # quiet until compose would have stopped it

    monkeypatch.setattr("batio.compose.wait_to_be_stopped", wait)
    assert main(["scheduler"], environ=environ) == 2
    assert waited == [QUIET_WAIT_S] and capsys.readouterr().err == batsims_line


def catches_sigterm(pid):
    """Whether process ``pid`` has a handler for SIGTERM (Linux: /proc/PID/status, SigCgt)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_sigterm_ends_the_waiting_scheduler_service_quietly(tmp_path):
    """Compose stops the scheduler service once the batsim service has refused: it must end at once
    (PID 1 ignores SIGTERM without a handler: compose would wait ten seconds) and say nothing."""
    environ = {**os.environ, "PLATFORM": "platforms/no_such.xml", "OUT": str(tmp_path)}
    scheduler = subprocess.Popen([sys.executable, "-m", "batio.compose", "scheduler"], env=environ,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not catches_sigterm(scheduler.pid) and time.monotonic() < deadline:  # past its checks, into its wait
        assert scheduler.poll() is None, scheduler.communicate()
        time.sleep(0.1)
    scheduler.terminate()
    out, err = scheduler.communicate(timeout=10)
    assert scheduler.returncode == 2 and out == err == ""


def test_a_used_out_is_refused_by_the_batsim_service_alone(tmp_path, capsys, monkeypatch):
    """The batsim service owns OUT: it refuses an earlier run's outputs in the CLI's line; the scheduler
    service writes nothing there, so the two cannot race on it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "out_jobs.csv").write_text("an earlier run's jobs\n")
    expected, _ = cli_error(run_argv({}, out), capsys)
    assert "is not empty" in expected and "--force" in expected
    assert main(["batsim"], environ={"OUT": str(out)}) == 2
    assert capsys.readouterr().err == expected
    served = []

    def serve(spec, port):
        served.append(port)
        return 0
    monkeypatch.setattr("batio.compose.serve", serve)
    assert main(["scheduler"], environ={"OUT": str(out), "PORT": "28123"}) == 0
    assert served == ["28123"] and [file.name for file in out.iterdir()] == ["out_jobs.csv"]


def fake_batsim(folder, code):
    """A `batsim` on PATH that fails with ``code`` and writes no outputs."""
    folder.mkdir()
    (folder / "batsim").write_text(f"#!/bin/sh\necho 'Batsim aborted' >&2\nexit {code}\n")
    (folder / "batsim").chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def test_a_failed_forced_run_leaves_no_earlier_jobs_beside_its_record(tmp_path, capsys, caplog, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    for name in ("out_jobs.csv", "out_schedule.csv", "out_run.json"):
        (out / name).write_text("an earlier run's\n")
    (out / "notes.txt").write_text("the user's\n")
    monkeypatch.setenv("PATH", fake_batsim(tmp_path / "bin", 134))
    assert main(["batsim"], environ={"OUT": str(out), "RUN_ARGS": "--force"}) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"batio: error: batsim exited with code 134; see {out}/out_batsim.log"
    assert len(err) == 1 and "the earlier run's outputs" in caplog.text  # the CLI's warning
    assert sorted(file.name for file in out.iterdir()) == ["notes.txt", "out_batsim.log", "out_run.json"]
    record = json.loads((out / "out_run.json").read_text())
    assert record["completed"] is False and "134" in record["error"] and record["scheduler_name"] == "easy"


def test_unfit_policy_under_allow_unfit_is_marked_degraded_as_in_the_cli(tmp_path, capsys, caplog, monkeypatch):
    """--allow-unfit in RUN_ARGS: the CLI's warning, then the run, its record marked degraded."""
    monkeypatch.setenv("PATH", fake_batsim(tmp_path / "bin", 1))
    environ = {**BAD_INPUTS["unfit policy"], "RUN_ARGS": "--allow-unfit"}
    cli_error(run_argv(environ, tmp_path / "cli"), capsys)
    cli_record = json.loads((tmp_path / "cli" / "out_run.json").read_text())
    assert main(["batsim"], environ={**environ, "OUT": str(tmp_path / "compose")}) == 2
    assert "adaptive does not fit these inputs, run anyway (degraded)" in caplog.text
    record = json.loads((tmp_path / "compose" / "out_run.json").read_text())
    assert record["degraded"] == cli_record["degraded"] and record["degraded"]


def test_compare_prints_paths_relative_to_the_folder_it_runs_in(tmp_path, capsys, monkeypatch):
    """In the compare service the current folder is the project folder (mounted at /batio): its
    result lines name paths the user can open on the host, not /batio/..."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["compare", "--platform", "cluster16_pfs", "--workload", "demo", "--schedulers", "easy",
                     "--no-io-slowdown", "--quiet", "--out", "out/cmp"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "results: out/cmp/results.csv" in lines
    assert "report:  out/cmp/report/report.md" in lines


NO_BATSIM = "needs a `batsim` binary (Batsim 4.2.1) on PATH"


def both_services(environ, batsim_first_s=0.0):
    """The two services as compose runs them, here as two processes: the batsim service's output,
    the scheduler service's completed process."""
    batsim = subprocess.Popen([sys.executable, "-m", "batio.compose", "batsim"], env=environ,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        batsim.wait(batsim_first_s)
    except subprocess.TimeoutExpired:
        pass
    assert batsim.returncode is None, found(batsim.stdout).read()
    scheduler = subprocess.run([sys.executable, "-m", "batio.compose", "scheduler"], env=environ, timeout=300,
                               capture_output=True, text=True)
    # Compose stops every service when one exits: the scheduler outlives the batsim service's page.
    page_before_scheduler_ended = (Path(environ["OUT"]) / "report.html").is_file()
    output = batsim.communicate(timeout=120)[0]
    assert page_before_scheduler_ended, output + scheduler.stderr
    assert scheduler.returncode == 0 and batsim.returncode == 0, output + scheduler.stdout + scheduler.stderr
    return output, scheduler


@pytest.mark.skipif(shutil.which("batsim") is None, reason=NO_BATSIM)
def test_batsim_may_connect_before_the_scheduler_binds_into_a_forced_out(tmp_path):
    """No health check: Batsim's ZeroMQ socket waits for the scheduler, which here starts 3 s later;
    RUN_ARGS=--force replaces an earlier run's outputs, as `batio run --force` does."""
    out = tmp_path / "compose"
    out.mkdir()
    (out / "out_jobs.csv").write_text("an earlier run's jobs\n")
    environ = {**os.environ, "OUT": str(out), "PORT": "28431", "RUN_ARGS": "--force"}
    output, _ = both_services(environ, batsim_first_s=3)
    assert "(batsim engine)" in output and "makespan" in output
    assert f"page:    {out}/report.html" in output  # the CLI's summary and page
    reference = tmp_path / "reference"
    assert cli.main(["run", "--platform", "cluster16_pfs", "--workload", "demo", "--scheduler", "easy",
                     "--engine", "batsim", "--out", str(reference), "--quiet"]) == 0
    assert (out / "out_jobs.csv").read_bytes() == (reference / "out_jobs.csv").read_bytes()
    assert json.loads((out / "out_run.json").read_text())["completed"] is True


@pytest.mark.skipif(shutil.which("batsim") is None, reason=NO_BATSIM)
def test_unfit_policy_under_allow_unfit_runs_degraded_as_batio_run(tmp_path, capsys):
    argv = ["--scheduler", "adaptive", "--platform", "kth_sp2", "--workload", "kth_sp2_first300"]
    assert cli.main(["run", *argv, "--engine", "batsim", "--allow-unfit", "--quiet",
                     "--out", str(tmp_path / "cli")]) == 0
    degraded_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("DEGRADED: "))
    environ = {**os.environ, **BAD_INPUTS["unfit policy"], "RUN_ARGS": "--allow-unfit",
               "OUT": str(tmp_path / "compose"), "PORT": "28432"}
    output, scheduler = both_services(environ)
    assert degraded_line in output.splitlines()
    assert "DEGRADED" not in scheduler.stdout + scheduler.stderr  # said once, by the batsim service
    for name in ("out_jobs.csv",):
        assert (tmp_path / "compose" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    records = [json.loads((tmp_path / where / "out_run.json").read_text()) for where in ("cli", "compose")]
    assert records[0]["degraded"] == records[1]["degraded"] != []


# -- containers/sources.sh: the pinned sources, or one line -----------------------------------
def git_repository(folder, tag):
    """A git repository whose ``tag`` names a commit of its own: not the pinned one."""
    run = {"cwd": folder, "check": True, "capture_output": True}
    folder.mkdir()
    subprocess.run(["git", "init", "-q"], **run)
    (folder / "README").write_text("not the pinned sources\n")
    subprocess.run(["git", "add", "README"], **run)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x"], **run)
    subprocess.run(["git", "tag", tag], **run)
    return folder


SOURCE_VARIABLES = ("BATSIM_GIT", "BATSCHED_GIT", "REDOX_GIT", "LOGURU_GIT", "INTERVALSET_DIR")


def sources_sh(environ, script=ROOT / "containers" / "sources.sh"):
    """sources.sh with ``environ`` for its variables (none of this machine's own)."""
    clean = {key: value for key, value in os.environ.items() if key not in SOURCE_VARIABLES}
    return subprocess.run(["sh", str(script)], env={**clean, **environ},
                          capture_output=True, text=True, timeout=60)


def sources_sh_with_pins(folder, intervalset):
    """sources.sh beside a versions.env that pins the intervalset files in ``intervalset`` (written
    here: the real ones are not in the repository), the other pins as shipped."""
    (folder / "containers").mkdir(parents=True)
    shutil.copy(ROOT / "containers" / "sources.sh", folder / "containers")
    pins = (ROOT / "containers" / "versions.env").read_text().splitlines()
    digests = {"INTERVALSET_CPP_SHA256": hashlib.sha256((intervalset / "src/intervalset.cpp").read_bytes()),
               "INTERVALSET_HPP_SHA256": hashlib.sha256((intervalset / "include/intervalset.hpp").read_bytes())}
    lines = [f"{line.split('=')[0]}={digests[line.split('=')[0]].hexdigest()}" if line.split("=")[0] in digests
             else line for line in pins]
    (folder / "containers" / "versions.env").write_text("\n".join(lines) + "\n")
    return folder / "containers" / "sources.sh"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_sources_sh_refuses_another_revision_than_the_pinned_one(tmp_path):
    repository = git_repository(tmp_path / "batsim", "v4.2.1")
    intervalset = tmp_path / "intervalset"
    for file in ("src/intervalset.cpp", "include/intervalset.hpp"):
        (intervalset / file).parent.mkdir(parents=True, exist_ok=True)
        (intervalset / file).write_text("// not intervalset v1.2.0\n")
    out = tmp_path / "sources"
    names = {"BATSIM_GIT": str(repository), "BATSCHED_GIT": str(repository), "REDOX_GIT": str(repository),
             "LOGURU_GIT": str(repository), "INTERVALSET_DIR": str(intervalset), "SOURCES_OUT": str(out)}
    missing = sources_sh({"SOURCES_OUT": str(out)})
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert missing.stderr.startswith("sources.sh: set BATSIM_GIT BATSCHED_GIT REDOX_GIT LOGURU_GIT INTERVALSET_DIR")
    other_files = sources_sh(names)
    assert other_files.returncode == 2 and other_files.stderr.count("\n") == 1, other_files.stderr
    assert f"INTERVALSET_DIR={intervalset} is not intervalset v1.2.0" in other_files.stderr
    # With those files pinned, the git sources are checked: the tag is there, on another commit.
    script = sources_sh_with_pins(tmp_path / "copy", intervalset)
    moved = sources_sh(names, script)
    assert moved.returncode == 2 and moved.stderr.count("\n") == 1, moved.stderr
    assert f"BATSIM_GIT={repository} has v4.2.1 at commit" in moved.stderr
    assert "not the pinned b5463dba818d6e8109e1bfd218d51c720fbdb30f" in moved.stderr
    absent = sources_sh({**names, "BATSIM_GIT": str(git_repository(tmp_path / "other", "v0"))}, script)
    assert absent.returncode == 2 and "has no revision v4.2.1" in absent.stderr
    assert not out.exists()  # nothing written


def test_the_scheduler_waits_for_the_page_only_after_a_clean_end(tmp_path, monkeypatch):
    """After SIMULATION_ENDS the scheduler outlives the batsim service's page; a scheduler that failed
    exits at once, so that compose ends the run rather than leave Batsim waiting for an answer."""
    import batio.engines.batsim
    waits = []
    monkeypatch.setattr("batio.compose.outlive_batsim", lambda page, since, seconds: waits.append(page))
    spec = cli.resolved_run(cli.parser().parse_args(run_argv({}, tmp_path))).spec
    for code in (0, 1):
        monkeypatch.setattr(batio.engines.batsim, "start_scheduler",
                            lambda spec, endpoint, log, code=code: subprocess.Popen(["sh", "-c", f"exit {code}"]))
        assert serve(spec, "28999") == code
    assert waits == [tmp_path / "report.html"]
