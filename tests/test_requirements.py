"""One fit check for `batio run`, `compare` and `sweep` (batio/requirements.py): an unfit policy is refused
before time 0, or run with --allow-unfit and marked degraded; what a policy declares is what
`batio describe` prints; runs say the scheduler name typed and keep their --out folder to themselves."""

import json

import pandas as pd
import pytest

from batio.cli import main

# Two jobs on cluster16_pfs, each writing 1 GB to its file system: I/O, but none of the
# fields (io_walltime_share, average_bw) EquilibrIO's I/O intensity is made of.
WRITERS = {"nb_res": 16, "jobs": [{"id": 1, "subtime": 0, "walltime": 100, "res": 2, "profile": "w"},
                                  {"id": 2, "subtime": 0, "walltime": 100, "res": 2, "profile": "w"}],
           "profiles": {"w": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e9, "storage": "pfs"}}}
UNFIT_LINE = ("batio: error: equilibrio does not fit these inputs: jobs lack fields (jobs lacking, of 2): "
              "'io_walltime_share' (2), 'average_bw' (2) (--allow-unfit runs it anyway, its results marked degraded)")


@pytest.fixture
def writers(tmp_path):
    path = tmp_path / "writers.json"
    path.write_text(json.dumps(WRITERS))
    return str(path)


def run(writers, out, scheduler, *extra):
    return main(["run", "--platform", "cluster16_pfs", "--workload", writers, "--scheduler", scheduler,
                 "--out", str(out), "--quiet", *extra])


def test_an_unfit_policy_is_refused_in_one_line_and_runs_degraded_when_allowed(tmp_path, writers, capsys):
    out = tmp_path / "eq"
    assert run(writers, out, "equilibrio") == 2
    assert capsys.readouterr().err.strip() == UNFIT_LINE
    assert not out.exists()  # refused before anything was made
    assert run(writers, out, "equilibrio", "--allow-unfit") == 0
    stdout = capsys.readouterr().out
    assert stdout.splitlines()[0].startswith("equilibrio (equilibrio.py {}) on cluster16_pfs.xml")
    assert "DEGRADED: equilibrio does not fit these inputs" in stdout
    record = json.loads((out / "out_run.json").read_text())
    assert record["scheduler_name"] == "equilibrio"
    assert record["degraded"] == ["jobs lack fields (jobs lacking, of 2): 'io_walltime_share' (2), 'average_bw' (2)"]


def test_the_summary_and_record_name_what_was_typed_and_an_out_folder_is_not_reused(tmp_path, writers, capsys):
    out = tmp_path / "fcfs"
    assert run(writers, out, "fcfs") == 0
    assert capsys.readouterr().out.splitlines()[0].startswith('fcfs (backfill.py {"backfill_max": 0}) on ')
    record = json.loads((out / "out_run.json").read_text())
    assert (record["scheduler_name"], record["degraded"]) == ("fcfs", [])
    assert run(writers, out, "easy") == 2
    assert f"--out: {out} is not empty" in capsys.readouterr().err
    assert json.loads((out / "out_run.json").read_text())["scheduler_name"] == "fcfs"  # untouched
    assert run(writers, out, "easy", "--force") == 0
    assert json.loads((out / "out_run.json").read_text())["scheduler_name"] == "easy"


def test_a_bad_option_is_an_invalid_configuration_before_time_0(tmp_path, writers, capsys):
    assert run(writers, tmp_path / "o", "easy", "--options", '{"limt": 2}') == 2
    assert capsys.readouterr().err.strip() == (
        "batio: error: invalid configuration: scheduler easy: Backfill: unknown option 'limt' = 2; "
        "known options: backfill_max, order")
    # CATIOS finds no storage bandwidth when the simulation begins: a configuration error, not a crash.
    assert run(writers, tmp_path / "c", "catios-oracle", "--allow-unfit") == 2
    err = capsys.readouterr().err
    assert "invalid configuration, found before time 0 (nothing ran): OptionError: Catios: option 'bandwidth'" in err
    assert "crashed" not in err and "partial" not in err


def test_compare_refuses_an_unfit_policy_and_marks_it_degraded_when_allowed(tmp_path, writers, capsys):
    arguments = ["compare", "--platform", "cluster16_pfs", "--workload", writers, "--schedulers", "easy,equilibrio",
                 "--no-io-slowdown", "--quiet", "--out"]
    assert main(arguments + [str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert "equilibrio does not fit these inputs: jobs lack fields" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "refused" / "runs").exists()
    assert main(arguments + [str(tmp_path / "allowed"), "--allow-unfit"]) == 0
    assert "equilibrio (DEGRADED: does not fit)" in capsys.readouterr().out
    results = pd.read_csv(tmp_path / "allowed" / "results.csv", dtype={"degraded": str}).fillna({"degraded": ""})
    results = results.set_index("policy")
    assert results.loc["easy", "degraded"] == ""
    assert results.loc["equilibrio", "degraded"].startswith("jobs lack fields")
    report = (tmp_path / "allowed" / "report" / "report.md").read_text()
    assert "## Degraded" in report and "equilibrio (DEGRADED: does not fit)" in report
    run_dir = results.loc["equilibrio", "run_dir"]
    assert json.loads((tmp_path / "allowed" / run_dir / "out_run.json").read_text())["degraded"]


def test_every_unfit_policy_is_named_in_the_one_line(tmp_path, writers, capsys):
    # equilibrio lacks two job fields; catios also lacks a storage host with a bandwidth property.
    arguments = ["compare", "--platform", "cluster16_pfs", "--workload", writers, "--schedulers",
                 "easy,equilibrio,catios", "--no-io-slowdown", "--quiet", "--out", str(tmp_path / "refused")]
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("batio: error: batio compare, field 'schedulers': equilibrio and catios do not fit these "
                          "inputs: equilibrio (jobs lack fields (jobs lacking, of 2): 'io_walltime_share' (2), "
                          "'average_bw' (2)); catios (needs exactly one storage host with property 'bandwidth', "
                          "found 0;")
    assert "(--allow-unfit runs them anyway, their results marked degraded)" in err
    assert not (tmp_path / "refused" / "runs").exists()


def test_a_sweep_checks_every_runs_options_before_the_first_run(tmp_path, writers, capsys):
    import yaml
    config = tmp_path / "typo.yaml"
    config.write_text(yaml.safe_dump({"platforms": ["cluster16_pfs"], "workloads": [writers],
                                      "schedulers": ["fcfs", {"scheduler": "easy", "grid": {"limt": [1, 2]}}]}))
    assert main(["sweep", str(config), "--out", str(tmp_path / "out"), "--workers", "0", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"batio: error: {config}, field 'schedulers[1].options': invalid configuration: "
                          "scheduler easy: Backfill: unknown option 'limt' = 1") and "\n" not in err
    assert not list((tmp_path / "out").glob("runs/*"))  # not even fcfs ran
    config.write_text(yaml.safe_dump({"platforms": ["cluster16_pfs"], "workloads": [writers],
                                      "schedulers": ["fcfs", "equilibrio"]}))
    assert main(["sweep", str(config), "--out", str(tmp_path / "out"), "--workers", "0", "--quiet"]) == 2
    assert capsys.readouterr().err.startswith(f"batio: error: {config}, field 'schedulers[1]': equilibrio does not "
                                              "fit these inputs: jobs lack fields (jobs lacking, of 2)")
    assert not list((tmp_path / "out").glob("runs/*"))


def test_describe_prints_the_declarations_the_check_uses(capsys):
    assert main(["describe", "io_aware"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("io_aware: paper 000 (Goponenko, Allan, Brandt, Dechev): I/O-aware backfill, Section VI, "
                          "Algorithms 2-4\n")
    assert "  - jobs whose profiles move bytes to or from storage\n" in out
    assert "  limit = 20.0 GiB/s: R_limit, the file-system throughput the reservations may not exceed" in out
    assert main(["describe", "fcfs"]) == 0
    assert "  backfill_max = 0 (preset): reservations per round" in capsys.readouterr().out
    assert main(["describe", "nosuch"]) == 2
    assert "nosuch: not a scheduler batio knows" in capsys.readouterr().err


def test_list_prints_one_line_per_policy(capsys):
    from batio import catalog
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    policies = [line.split()[0] for line in lines if line.startswith("  ") and not line.startswith("  (")]
    assert policies == list(catalog.SCHEDULERS)
    assert "  lea-bf" in "\n".join(lines) and "paper 004" in next(line for line in lines if line.startswith("  lea "))


def test_a_sweep_off_a_terminal_logs_its_progress(tmp_path, writers, caplog):
    import logging

    import yaml
    config = tmp_path / "two.yaml"
    config.write_text(yaml.safe_dump({"platforms": ["cluster16_pfs"], "workloads": [writers], "io_slowdown": False,
                                      "schedulers": ["fcfs", "easy"]}))
    caplog.set_level(logging.INFO, logger="batio.progress")
    assert main(["sweep", str(config), "--out", str(tmp_path / "out"), "--workers", "0"]) == 0
    assert [message.split(" after ")[0] for message in caplog.messages if message.startswith("runs:")] == [
        "runs: 1 of 2 done (50 %)", "runs: 2 of 2 done (100 %)"]


def test_the_kits_requirements_type_and_the_checked_keys_agree():
    """A policy's REQUIRES is typed by the kit (schedulers/options.py's Requirements, which the
    type check holds it to); batio.requirements checks and explains each key. A key added to one
    and not the other would be accepted unchecked, or checked but refused by the type check."""
    from typing import get_type_hints

    from batio.requirements import REQUIREMENT_KEYS
    from batio.schedulers.options import Requirements
    assert list(get_type_hints(Requirements)) == list(REQUIREMENT_KEYS)
