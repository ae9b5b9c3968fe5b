"""Numeric options are read by batio (one line naming the option, never argparse's usage
block), counts are bounded before anything is written, and --master-host names a host."""

from pathlib import Path

from conftest import TINY
import pytest
from test_bad_input_values import JOB, one_line_error, run_argv

from batio.cli import main
from batio.compare import comparison_grid
from batio.errors import InputError
from batio.sweep.config import MAX_SEEDS

GENERATOR = "batio.workloads.demo:demo_workload"


@pytest.mark.parametrize("value, expected", [
    ("1e18", "expected a whole number in ASCII digits, got '1e18'"),
    ("abc", "expected a whole number in ASCII digits, got 'abc'"),
    ("10^12", "expected a whole number in ASCII digits, got '10^12'"),
    ("\u0661", "expected a whole number in ASCII digits, got '\u0661'"),
    ("100000", f"must be from 1 to {MAX_SEEDS}, got 100000"),
    ("0", f"must be from 1 to {MAX_SEEDS}, got 0"),
])
def test_compare_seeds_out_of_bounds_is_one_line_before_any_write(tmp_path, capsys, value, expected):
    out = tmp_path / "cmp"
    line = one_line_error(capsys, ["compare", "--platform", "tiny", "--workload", GENERATOR, "--schedulers", "fcfs",
                                   "--seeds", value, "--out", str(out)])
    assert line == f"batio: error: --seeds: {expected}"
    assert not out.exists()


def test_the_seed_bound_holds_for_the_api_too():
    with pytest.raises(InputError, match=f"--seeds: expected a number of seeds from 1 to {MAX_SEEDS}, got 10000"):
        comparison_grid("tiny", GENERATOR, "fcfs", seeds=10 ** 4)


@pytest.mark.parametrize("flag, value, expected", [
    ("--port", "http", "--port: expected a whole number in ASCII digits, got 'http'"),
    ("--timeout", "nan", "--timeout: value 'nan' is not a number in ASCII decimal digits"),
    ("--max-idle", "1_000", "--max-idle: value '1_000' is not a number in ASCII decimal digits"),
    ("--bsld-tau", "inf", "--bsld-tau: value 'inf' is not a number in ASCII decimal digits"),
    ("--io-sample-period", "", "--io-sample-period: value '' is not a number in ASCII decimal digits"),
])
def test_a_run_flag_that_is_no_number_is_one_line(tmp_path, capsys, flag, value, expected):
    line = one_line_error(capsys, [*run_argv(tmp_path), flag, value])
    assert line == f"batio: error: {expected}"


@pytest.mark.parametrize("argv, expected", [
    (["import", "swf", "t.swf", "--max-jobs", "1e3"], "--max-jobs: expected a whole number in ASCII digits"),
    (["import", "swf", "t.swf", "--sample", "nan"], "--sample: value 'nan' is not a number"),
    (["import", "swf", "t.swf", "--nodes", "-4"], "--nodes: expected a whole number in ASCII digits, got '-4'"),
    (["platform", "--nodes", "\uff12", "--speed", "1Gf", "--node-link", "1GBps", "--pfs-bandwidth", "1GBps"],
     "--nodes: expected a whole number in ASCII digits"),
])
def test_other_numeric_flags_are_one_line(tmp_path, capsys, argv, expected):
    line = one_line_error(capsys, [*argv, "--out", str(tmp_path / "o")])
    assert line.startswith(f"batio: error: {expected}"), line


def platform_with_a_master_role(tmp_path):
    path = tmp_path / "p.xml"
    path.write_text("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
                    "<platform version='4.1'><zone id='z' routing='Full'>"
                    "<host id='boss' speed='1Gf'><prop id='role' value='master'/></host>"
                    "<host id='h0' speed='1Gf'/><link id='l' bandwidth='1GBps' latency='0s'/>"
                    "<route src='boss' dst='h0'><link_ctn id='l'/></route></zone></platform>")
    return path


@pytest.mark.parametrize("host", ["nope", ""])
def test_a_master_host_naming_no_host_is_refused(tmp_path, capsys, host):
    platform = platform_with_a_master_role(tmp_path)
    line = one_line_error(capsys, [*run_argv(tmp_path, platform, JOB), "--master-host", host])
    assert line == f"batio: error: --master-host: '{host}' names no host of {platform} (hosts: boss, h0)"


def test_the_default_master_host_may_be_absent_when_a_host_has_the_role(tmp_path):
    assert main(run_argv(tmp_path, platform_with_a_master_role(tmp_path), JOB)) == 0
    assert Path(tmp_path / "out" / "out_jobs.csv").exists()
    assert main([*run_argv(tmp_path, TINY, JOB), "--force", "--master-host", "master_host"]) == 0
