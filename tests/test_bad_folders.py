"""`batio report` on a damaged output folder: one line naming the file, never a
traceback, never a partial run drawn as if whole."""

import csv
import io
import json
import shutil

import pytest
from test_bad_input_values import one_line_error

from batio.cli import main


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A run folder and a comparison folder, made once."""
    base = tmp_path_factory.mktemp("made")
    assert main(["run", "--platform", "cluster16_pfs", "--workload", "demo", "--scheduler", "fcfs",
                 "--out", str(base / "run"), "--quiet"]) == 0
    assert main(["compare", "--platform", "cluster16_pfs", "--workload", "demo", "--schedulers", "fcfs,easy",
                 "--out", str(base / "cmp"), "--quiet"]) == 0
    return base


def lines(path):
    return path.read_text().splitlines(True)


def without(column):
    def edit(path):
        rows = list(csv.reader(io.StringIO(path.read_text())))
        index = rows[0].index(column)
        text = io.StringIO()
        csv.writer(text).writerows([row[:index] + row[index + 1:] for row in rows])
        path.write_text(text.getvalue())
    return edit


def first_wait(value):
    def edit(path):
        rows = lines(path)
        cells = rows[1].split(",")
        cells[rows[0].split(",").index("waiting_time")] = value
        rows[1] = ",".join(cells)
        path.write_text("".join(rows))
    return edit


def record(change):
    def edit(path):
        path.write_text(json.dumps(change(json.loads(path.read_text()))))
    return edit


RUN_CASES = {
    "out_jobs.csv": [
        (lambda p: p.write_text(""), ": empty file"),
        (lambda p: p.write_text("garbage\n1\n"), ", field 'job_id': lacks columns job_id"),
        (without("waiting_time"), ", field 'waiting_time': lacks column waiting_time"),
        (lambda p: p.write_text(p.read_text()[:len(p.read_text()) // 2]), " for the header's 17: the file is cut"),
        (lambda p: p.write_text(lines(p)[0]), ": a header and no row"),
        (lambda p: p.write_text("".join(lines(p)[:10])), ": holds 9 of the 48 jobs of w0 (demo.json)"),
        (lambda p: p.write_text("".join(lines(p) + lines(p)[1:2])), ", line 50, field 'job_id': job w0!2 already on "
                                                                    "line 2"),
        (first_wait("-50"), ", line 2, field 'waiting_time': job w0!2 waited -50 s"),
        (first_wait("nan"), ", line 2, field 'waiting_time': 'nan' is not a finite number"),
    ],
    "out_machine_states.csv": [
        (lambda p: p.write_text(""), ": empty file"),
        (lambda p: p.write_text("zz\nq\n"), ", field 'time': lacks columns time"),
        (without("nb_computing"), ", field 'nb_computing': lacks column nb_computing"),
    ],
    "out_io.csv": [
        (lambda p: p.write_text(""), ": empty file"),
        (lambda p: p.write_text("a;b\n1;2\n"), ", field 'time': lacks columns time"),
        (without("storage"), ", field 'storage': lacks column storage"),
    ],
    "out_run.json": [
        (lambda p: p.write_text(""), ": not the JSON batio writes (cut short?)"),
        (lambda p: p.write_text("garbage"), ": not the JSON batio writes (cut short?)"),
        (lambda p: p.write_text(p.read_text()[:700]), ": not the JSON batio writes (cut short?)"),
        (lambda p: p.write_text("[]"), ": expected a JSON object, got a list"),
        (record(lambda r: {**r, "spec": "x"}), ", field 'spec': its spec is not an object"),
        (record(lambda r: {**r, "nb_compute_resources": "8"}), ", field 'nb_compute_resources': expected a number"),
    ],
}


@pytest.mark.parametrize("name, edit, expected", [(name, edit, expected) for name, cases in RUN_CASES.items()
                                                   for edit, expected in cases])
def test_a_damaged_run_folder_is_one_line_naming_the_file(tmp_path, capsys, made, name, edit, expected):
    folder = tmp_path / "run"
    shutil.copytree(made / "run", folder)
    (folder / "report.html").unlink()
    edit(folder / name)
    line = one_line_error(capsys, ["report", str(folder)])
    assert line.startswith(f"batio: error: {folder / name}") and expected in line, line
    assert not (folder / "report.html").exists()


@pytest.mark.parametrize("edit, expected", [
    (lambda p: p.write_text(""), "results.csv: empty file"),
    (lambda p: p.write_text("garbage\n\"\n"), "results.csv, field 'run_id': lacks columns"),
    (lambda p: p.write_text(lines(p)[0]), "results.csv: a header and no row"),
    (without("policy"), "results.csv, field 'policy': lacks column policy"),
    (without("makespan"), "results.csv, field 'makespan': lacks column makespan"),
    (lambda p: p.write_text(p.read_text()[:int(len(p.read_text()) * 0.6)]),
     "fields for the header's 39: the file is cut short"),
])
def test_a_damaged_results_table_is_one_line(tmp_path, capsys, made, edit, expected):
    folder = tmp_path / "cmp"
    shutil.copytree(made / "cmp", folder)
    edit(folder / "results.csv")
    line = one_line_error(capsys, ["report", str(folder)])
    assert line.startswith(f"batio: error: {folder}/") and expected in line, line


def test_a_damaged_run_of_a_comparison_names_the_row_and_the_file(tmp_path, capsys, made):
    folder = tmp_path / "cmp"
    shutil.copytree(made / "cmp", folder)
    run_id = lines(folder / "results.csv")[1].split(",")[0]
    jobs = next((folder / "runs").glob("fcfs-*")) / "out_jobs.csv"
    jobs.write_text("".join(lines(jobs)[:10]))
    line = one_line_error(capsys, ["report", str(folder)])
    assert line.startswith(f"batio: error: {folder / 'results.csv'}, line 2: run {run_id}: {jobs}: holds 9 of"), line


def test_whole_folders_are_drawn(made, capsys):
    assert main(["report", str(made / "run")]) == 0
    assert main(["report", str(made / "cmp")]) == 0
