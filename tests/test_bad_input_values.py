"""Input classes: values at the edges, structure and encodings that were
accepted, aborted SimGrid, hung or ended in a traceback. Each is one command over a
small file, ending in exit 2 and one line naming the file, the element or the field."""

import errno
import json
import os
from pathlib import Path
import re
import subprocess

from conftest import TINY
import pytest

from batio.cli import main

JOB: dict = {"nb_res": 1, "jobs": [{"id": "A", "subtime": 0, "walltime": 100, "res": 1, "profile": "d"}],
       "profiles": {"d": {"type": "delay", "delay": 10}}}
SWF_LINE = "1 0 5 100 4 -1 -1 4 200 -1 1 1 1 1 1 1 -1 -1\n"
SACCT_HEADER = "JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|State\n"


def sacct_line(job_id="1", nodes="2", submit="2024-03-01T00:00:00"):
    return f"{job_id}|{submit}|2024-03-01T00:01:00|2024-03-01T00:11:00|00:10:00|01:00:00|{nodes}|COMPLETED\n"


def one_line_error(capsys, argv):
    """Run ``batio ARGV``; the error line, checked to be alone, with exit 2 and no traceback."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def run_argv(tmp_path, platform=TINY, work=None):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(work or JOB))
    return ["run", "--platform", str(platform), "--workload", str(path), "--scheduler", "fcfs", "--out",
            str(tmp_path / "out"), "--quiet"]


def platform(tmp_path, speed="1Gf", core="1", bandwidth="1GBps", latency="0s", routing="Full", version="4.1",
             link_props="", extra="", host_id="h0"):
    path = tmp_path / "p.xml"
    path.write_text("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
                    f"<platform{'' if version is None else f' version={version!r}'}>"
                    f"<zone id='z' routing='{routing}'><host id='master_host' speed='1Gf'/>"
                    f"<host id='{host_id}' speed='{speed}' core='{core}'/>"
                    f"<link id='l' bandwidth='{bandwidth}' latency='{latency}'>{link_props}</link>"
                    f"<route src='master_host' dst='h0'><link_ctn id='l'/></route>{extra}</zone></platform>")
    return path


def curve(value, prop="batio:contention"):
    return f"<prop id='{prop}' value='{value}'/>"


@pytest.mark.parametrize("element, expected", [
    # accepted nonsense
    ({"speed": "0x10f"}, "field 'speed': <host id='h0'>: speed '0x10f' is not a number in ASCII decimal digits"),
    ({"speed": "1Gf,-1Gf"}, "field 'speed': <host id='h0'>: speed '-1Gf' is out of bounds"),
    ({"speed": "1Gf,nanf"}, "field 'speed': <host id='h0'>: speed 'nanf' is not a number"),
    ({"core": "2.5"}, "field 'core': <host id='h0'>: core '2.5' is not a whole number from 1 to 1048576"),
    ({"link_props": curve("1:1e400")}, "field 'batio:contention': link 'l': point '1:1e400': throughput '1e400' is "
                                       "out of bounds"),
    ({"link_props": curve("\u0661:1GBps")}, "field 'batio:contention': link 'l': point '\u0661:1GBps' is not "
                                           "'clients:throughput' with a whole number of clients in ASCII digits"),
    ({"link_props": curve("1:1GBps") * 2}, "field 'batio:contention': <link id='l'>: property given twice"),
    # SimGrid aborts ("the engine process died (exit code -6)")
    ({"speed": "1e-300f"}, "field 'speed': <host id='h0'>: speed '1e-300f' is out of bounds: expected 0 or 0.001f"),
    ({"core": "0"}, "field 'core': <host id='h0'>: core '0' is not a whole number from 1 to 1048576"),
    ({"bandwidth": "1e-300Bps"}, "field 'bandwidth': <link id='l'>: bandwidth '1e-300Bps' is out of bounds"),
    ({"bandwidth": "1GBps,2GBps"}, "field 'bandwidth': <link id='l'>: bandwidth '1GBps,2GBps' is a list"),
    ({"extra": "<route src='h0' dst='master_host'><link_ctn id='l'/></route>"},
     "field 'route': <zone id='z'>: the route from 'h0' to 'master_host' is declared twice"),
    ({"routing": "None"}, "field 'routing': <zone id='z'>: a zone with routing 'None' cannot declare routes"),
    ({"routing": "Bogus"}, "field 'routing': <zone id='z'>: unknown routing 'Bogus' (SimGrid 3.32 knows Full"),
    ({"link_props": curve("1:1e-300")}, "field 'batio:contention': link 'l': point '1:1e-300': throughput '1e-300' "
                                        "is out of bounds"),
    # messy errors
    ({"version": "3"}, "field 'version': platform version '3': SimGrid 3.32 reads version 4.1"),
    ({"version": None}, "field 'version': platform version None: SimGrid 3.32 reads version 4.1"),
    ({"host_id": ""}, "field 'id': a <host> has an empty or no 'id'"),
    ({"latency": "1e9s"}, "field 'latency': <link id='l'>: latency '1e9s' is out of bounds: expected 0s to 1e+06s"),
])
def test_platform_values_simgrid_misreads_or_aborts_on(tmp_path, capsys, element, expected):
    path = platform(tmp_path, **element)
    assert one_line_error(capsys, run_argv(tmp_path, path)).startswith(f"batio: error: {path}, {expected}")


def test_a_near_miss_of_a_property_name_is_a_warning_naming_it(tmp_path, caplog):
    assert main(run_argv(tmp_path, platform(tmp_path, link_props=curve("1:1GBps", "batio:contenton")))) == 0
    assert "property 'batio:contenton' is not one batio reads (names are matched exactly); did you mean " \
           "'batio:contention'?" in caplog.text


@pytest.mark.parametrize("name", ["batio:Contention", "BATIO:CONTENTION_READ", "Role"])
def test_a_property_name_in_another_case_is_refused(tmp_path, capsys, name):
    """Read by no one, the run would go on without the curve it was given."""
    path = platform(tmp_path, link_props=curve("1:1GBps", name))
    line = one_line_error(capsys, run_argv(tmp_path, path))
    assert line.startswith(f"batio: error: {path}, field '{name}': <link id='l'>: property names are matched "
                           "exactly: write "), line


def composed_chain(depth, width=1, leaf="d"):
    profiles: dict[str, dict] = {f"p{i}": {"type": "composed", "seq": [f"p{i + 1}"] * width} for i in range(depth)}
    profiles[f"p{depth}"] = {"type": "delay", "delay": 1}
    return {**JOB, "jobs": [dict(JOB["jobs"][0], profile="p0")], "profiles": profiles}


@pytest.mark.parametrize("work, expected", [
    ({**JOB, "profiles": {"d": {"type": {"a": 1}}}}, "profile 'd', field 'type': unknown profile type {'a': 1}"),
    ({**JOB, "profiles": {"d": {"type": [1]}}}, "profile 'd', field 'type': unknown profile type [1]"),
    (composed_chain(2000), "field 'seq': composed profiles nest more than 100 levels deep"),
    ({**JOB, "profiles": {f"p{i}": {"type": "composed", "seq": [f"p{(i + 1) % 2000}"]} for i in range(2000)}
      | {"d": {"type": "delay", "delay": 1}}},
     "profile 'p0', field 'seq': composed profiles form a cycle: p0 -> p1 -> p2 -> ... 1996 more ... -> p1999 -> p0"),
    (composed_chain(40, width=2), "profile 'p20', field 'repeat': a job running it would run more than 1,000,000"),
    ({**JOB, "profiles": {"d": {"type": "composed", "seq": ["e"], "repeat": 2 ** 63},
                          "e": {"type": "delay", "delay": 1}}}, "profile 'd', field 'repeat': a job running it"),
])
def test_profiles_of_wrong_type_or_unbounded_expansion(tmp_path, capsys, work, expected):
    line = one_line_error(capsys, run_argv(tmp_path, work=work))
    assert line.startswith(f"batio: error: {tmp_path / 'w.json'}, ") and expected in line, line


@pytest.mark.parametrize("text, options, expected", [
    (b"\x92\xf3binary noise", [], "t.swf: not UTF-8 text (byte 0x92 at offset 0)"),
    (SWF_LINE.encode("utf-16"), [], "t.swf: not UTF-8 text (byte 0xff at offset 0)"),
    (f"; UnixStartTime: 1e300\n{SWF_LINE}".encode(), [], "field 'UnixStartTime': value '1e300' is out of bounds"),
    (f"; UnixStartTime: nan\n{SWF_LINE}".encode(), [], "field 'UnixStartTime': value 'nan' is not a number"),
    (f"; MaxProcs: 1e300\n{SWF_LINE}".encode(), [], "field 'MaxProcs': value '1e300' is out of bounds"),
    (f"; MaxProcs: 5000000000\n{SWF_LINE}".encode(), [], "the machine would have 5e+09 nodes (header MaxProcs"),
    (SWF_LINE.replace("1 0 5", "1 1e300 5").encode(), [], "field 'submit_time (field 2)': value '1e300' is out"),
    (SWF_LINE.encode(), ["--nodes", "1099511627776"], "--nodes: must be from 1 to 2147483647"),
    (f"; UnixStartTime: 845000000\n{SWF_LINE}".encode(), ["--from", "0001-01-01"],
     "--from: expected trace seconds or a date within 1e+10 s"),
])
def test_swf_imports_refuse_what_cannot_be_read_or_run(tmp_path, capsys, text, options, expected):
    trace = tmp_path / "t.swf"
    trace.write_bytes(text)
    line = one_line_error(capsys, ["import", "swf", str(trace), *options, "--out", str(tmp_path / "w.json")])
    assert expected in line and not (tmp_path / "w.json").exists(), line


@pytest.mark.parametrize("text, expected", [
    ((SACCT_HEADER + sacct_line()).encode("utf-16"), "t.sacct: not UTF-8 text (byte 0xff at offset 0)"),
    (SACCT_HEADER.encode() + b"\xce\x00\xff", "t.sacct: not UTF-8 text (byte 0xce at offset 54)"),
    ((SACCT_HEADER + sacct_line("1,2")).encode(), "field 'JobID': job id '1,2' contains a comma"),
    ((SACCT_HEADER + sacct_line('1"2')).encode(), "field 'JobID': job id '1\"2' contains a comma, a double quote"),
    ((SACCT_HEADER + sacct_line(nodes="\u0661")).encode(), "field 'NNodes': node count '\u0661' is not a whole"),
    ((SACCT_HEADER + sacct_line() + sacct_line("2", submit="9999-01-01T00:00:00")).encode(),
     "line 3, field 'Submit': '9999-01-01T00:00:00' is not a date a record can hold"),
])
def test_sacct_imports_refuse_what_cannot_be_read(tmp_path, capsys, text, expected):
    trace = tmp_path / "t.sacct"
    trace.write_bytes(text)
    line = one_line_error(capsys, ["import", "sacct", str(trace), "--out", str(tmp_path / "w.json")])
    assert expected in line, line


@pytest.mark.parametrize("job_id", ["\u00b2", "\u00b9\u2070\u00b9", "1\u0661"])
def test_a_sacct_job_id_of_other_digits_is_refused(tmp_path, capsys, job_id):
    """'¹⁰¹' reads as job 101 to a person but matches no Darshan log nor job 101."""
    trace = tmp_path / "t.sacct"
    trace.write_text(SACCT_HEADER + sacct_line(job_id))
    line = one_line_error(capsys, ["import", "sacct", str(trace), "--out", str(tmp_path / "w.json")])
    assert line.endswith(f"line 2, field 'JobID': job id '{job_id}' has digits other than ASCII 0-9"), line
    assert not (tmp_path / "w.json").exists()


@pytest.mark.parametrize("command", [["import", "swf", "t.swf"],
                                     ["platform", "--nodes", "2", "--speed", "1Gf", "--node-link", "1GBps",
                                      "--pfs-bandwidth", "1GBps"]])
@pytest.mark.parametrize("out, expected", [
    ("folder", "--out: {tmp}/folder is a folder; expected the name of a file to write"),
    ("afile/w.json", "--out: cannot write {tmp}/afile/w.json: {tmp}/afile is not a folder"),
    ("/dev/full", "--out: cannot write /dev/full: No space left on device"),
])
def test_file_writing_commands_check_their_destination(tmp_path, capsys, monkeypatch, command, out, expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.swf").write_text(SWF_LINE)
    (tmp_path / "folder").mkdir()
    (tmp_path / "afile").write_text("x")
    destination = out if out.startswith("/") else str(tmp_path / out)
    line = one_line_error(capsys, [*command, "--out", destination])
    assert line == "batio: error: " + expected.format(tmp=tmp_path)


@pytest.fixture
def full_disk(tmp_path):
    """A folder on a 64 KiB tmpfs filled to the last byte (mounting needs root: skipped otherwise)."""
    folder = tmp_path / "full"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (folder / "out").mkdir()
        filler = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(filler, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(filler)
        yield folder / "out"
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def full_disk_commands(tmp_path, out):
    work = tmp_path / "w.json"
    work.write_text(json.dumps(JOB))
    (tmp_path / "t.swf").write_text(SWF_LINE)
    (tmp_path / "sweep.yaml").write_text(f"platforms: [{TINY}]\nworkloads: [{work}]\nschedulers: [fcfs]\n")
    return {"run": ["run", "--platform", str(TINY), "--workload", str(work), "--scheduler", "fcfs", "--out", str(out),
                    "--quiet"],
            "compare": ["compare", "--platform", str(TINY), "--workload", str(work), "--schedulers", "fcfs,easy",
                        "--out", str(out), "--workers", "0"],
            "sweep": ["sweep", str(tmp_path / "sweep.yaml"), "--out", str(out), "--workers", "0", "--quiet"],
            "import": ["import", "swf", str(tmp_path / "t.swf"), "--out", str(out / "w.json")]}


@pytest.mark.parametrize("command", ["run", "compare", "sweep", "import"])
def test_a_full_disk_is_one_line_naming_the_file(tmp_path, capsys, full_disk, command):
    line = one_line_error(capsys, full_disk_commands(tmp_path, full_disk)[command])
    assert re.fullmatch(rf"batio: error: --out: cannot write {full_disk}/\S+: No space left on device", line), line


def test_a_full_disk_simulated_stops_compare_naming_the_file(tmp_path, capsys, monkeypatch):
    """ENOSPC as Python raises it on close, without a file name (where no tmpfs can be mounted)."""
    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    command = full_disk_commands(tmp_path, tmp_path / "out")["compare"]
    monkeypatch.setattr(Path, "write_text", full)
    line = one_line_error(capsys, command)
    assert re.fullmatch(rf"batio: error: --out: cannot write {tmp_path}/out/workloads/\S+\.json: No space left on "
                        "device", line), line


def cluster(tmp_path, radical, inside=""):
    path = tmp_path / "p.xml"
    path.write_text("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
                    f"<platform version='4.1'><cluster id='c' prefix='n' suffix='' radical='{radical}' speed='1Gf' "
                    f"bw='1GBps' lat='0s'>{inside}</cluster></platform>")
    return path


def test_many_masters_are_counted_not_listed(tmp_path, capsys):
    line = one_line_error(capsys, run_argv(tmp_path, cluster(tmp_path, "0-39", "<prop id='role' value='master'/>")))
    assert line.endswith("found 40: n0, n1, n10, n11, n12, ... (35 more)"), line


def test_calibrate_names_the_measurement_not_its_probe(tmp_path, capsys):
    measured = tmp_path / "ior.csv"
    measured.write_text("clients,GB/s\n1,1e-300\n")
    line = one_line_error(capsys, ["calibrate", str(measured), "--out", str(tmp_path / "out")])
    # The reader's bounds refuse it first, naming the file and its line (never the probe platform).
    assert line.startswith(f"batio: error: {measured}, field 'throughput': line 2: the aggregate throughput"), line


def test_a_contention_csv_unit_is_named_as_its_option(tmp_path, capsys):
    measured = tmp_path / "ior.csv"
    measured.write_text("clients,GB/s\n1,1\n")
    line = one_line_error(capsys, ["platform", "--nodes", "2", "--speed", "1Gf", "--node-link", "1GBps",
                                   "--pfs-bandwidth", "1GBps", "--contention", str(measured), "--contention-unit",
                                   "furlongs", "--out", str(tmp_path / "p.xml")])
    assert line.startswith("batio: error: --contention-unit: unknown unit 'furlongs'"), line


def test_an_invalid_darshan_log_is_one_line(tmp_path, capfd):
    pytest.importorskip("darshan")
    (tmp_path / "t.swf").write_text(SWF_LINE)
    (tmp_path / "bad.darshan").write_bytes(b"not a darshan log\n")
    assert main(["import", "swf", str(tmp_path / "t.swf"), "--darshan", str(tmp_path / "bad.darshan"), "--out",
                 str(tmp_path / "w.json")]) == 2
    err = capfd.readouterr().err  # the file descriptor: PyDarshan's C library writes there
    assert err == (f"batio: error: {tmp_path / 'bad.darshan'}: not a Darshan log PyDarshan can read: unable to parse "
                   "log file format version.\n")


def test_hosts_of_a_none_zone_are_refused_not_aborted_on(tmp_path, capsys):
    """Found by the fuzz suite: SimGrid aborts on a route between two hosts of a None zone."""
    path = tmp_path / "p.xml"
    path.write_text("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
                    "<platform version='4.1'><zone id='z' routing='None'><host id='master_host' speed='1Gf'/>"
                    "<host id='h0' speed='1Gf'/><host id='pfs' speed='1Gf'><prop id='role' value='storage'/></host>"
                    "</zone></platform>")
    line = one_line_error(capsys, run_argv(tmp_path, path))
    assert line == (f"batio: error: {path}, field 'routing': <zone id='z'>: its 3 hosts have no route between them "
                    "in a zone with routing 'None' (SimGrid aborts on the first route asked); use routing 'Full' with "
                    "<route>s"), line


def test_a_dijkstra_zone_without_routes_is_refused_not_crashed(tmp_path, capsys):
    """Found by the fuzz suite: SimGrid segfaults on a transfer no chain of routes joins (exit -11)."""
    path = platform(tmp_path, routing="Dijkstra", host_id="h1")
    line = one_line_error(capsys, run_argv(tmp_path, path))
    assert line == (f"batio: error: {path}, field 'route': <zone id='z'>: no chain of routes joins host 'master_host' "
                    "to 'h1' (SimGrid's Dijkstra routing crashes on a transfer between them); add a <route>"), line


def test_a_floyd_zone_without_the_route_a_job_needs(tmp_path, capsys):
    """Found by the fuzz suite: SimGrid's ValueError at the transfer was an internal engine error."""
    path = platform(tmp_path, routing="Floyd")
    path.write_text(path.read_text().replace("<route src='master_host' dst='h0'><link_ctn id='l'/></route>", "")
                    .replace("</zone>", "<host id='pfs' speed='1Gf'><prop id='role' value='storage'/></host></zone>"))
    work = {"nb_res": 1, "jobs": [{"id": "A", "subtime": 0, "res": 1, "profile": "w"}],
            "profiles": {"w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e6}}}
    line = one_line_error(capsys, run_argv(tmp_path, path, work))
    assert line.startswith(f"batio: error: {path}, field 'route': job 'w0!A' cannot run: No route from 'h0' to "
                           "'pfs' (declare a <route> between them)"), line


def test_a_cluster_radical_of_billions_of_hosts_is_refused_at_once(tmp_path, capsys):
    path = cluster(tmp_path, "0-99999999999")
    line = one_line_error(capsys, run_argv(tmp_path, path))
    assert line == (f"batio: error: {path}, field 'radical': cluster 'c': radical '0-99999999999' makes more than "
                    "1048576 hosts"), line


@pytest.mark.parametrize("end", ["src", "dst"])
def test_a_route_naming_no_host_is_one_line(tmp_path, capsys, end):
    """SimGrid's refusal ('does name a node') spans two lines."""
    route = "<route src='ghost' dst='h0'>" if end == "src" else "<route src='h0' dst='ghost'>"
    path = platform(tmp_path, extra=route + "<link_ctn id='l'/></route>")
    line = one_line_error(capsys, run_argv(tmp_path, path))
    assert line == (f"batio: error: {path}, field 'route': <zone id='z'>: a route's {end} 'ghost' names no host, "
                    "router or peer of the platform")
