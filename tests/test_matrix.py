"""`batio matrix`: which catalog policies fit which input (and why not), and the ranking page."""

import json
from pathlib import Path
import re

import pandas as pd
import pytest

from batio import catalog, requirements
from batio.cli import main
from batio.errors import InputError
from batio.matrix import RESTS_ON, InputSummary, load_matrix, plan_matrix, rank_policies, write_page

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "scripts" / "sweeps" / "matrix.yaml"
PAGE = ROOT / "scripts" / "results" / "matrix.md"


def write_yaml(folder, config, name="matrix.yaml"):
    import yaml
    path = Path(folder) / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def facts(platform, workload):
    workload_jobs = json.loads(catalog.workload_path(workload).read_text())
    return requirements.InputFacts.of(catalog.platform_path(platform), workload_jobs)


def unmet_requirements(name, facts, input_options):
    """What the matrix skips a policy for: its needs (with its presets) against an input and the input's options."""
    return requirements.unmet(catalog.declaration(name), facts, input_options)


# -- fit ------------------------------------------------------------------------------------
def test_each_family_fits_the_inputs_it_was_made_for():
    assert unmet_requirements("lea", facts("memcluster486", "memcluster486_slice"), {}) == []
    assert unmet_requirements("catios", facts("catios_cluster", "catios_bw"), {}) == []
    assert unmet_requirements("catios-oracle", facts("catios_cluster", "catios_bw"), {}) == []
    assert unmet_requirements("equilibrio", facts("theta_quarter", "equilibrio_theta"), {}) == []
    assert unmet_requirements("io_aware", facts("stria15_lustre", "stria_w2"), {}) == []
    # Their bundled platforms need no option: the defaults describe them.
    assert unmet_requirements("iolist", facts("periodic_rack", "periodic_mbn_a06"), {}) == []
    for name in ("fcfs", "easy", "conservative", "backfill", "easy-ljf"):
        assert unmet_requirements(name, facts("kth_sp2", "kth_sp2_first300"), {}) == []


def test_a_pair_that_lacks_something_is_skipped_with_every_reason():
    # The KTH trace's jobs only wait (delay profiles): nothing for I/O-aware policies to act on.
    assert unmet_requirements("io_aware", facts("kth_sp2", "kth_sp2_first300"), {"limit": 1}) == [
        "no job moves bytes to or from storage (the profiles only compute or wait)"]
    # Locality on the demo: no node memory, no files, jobs on several hosts (17 of its 48 jobs on one).
    reasons = unmet_requirements("lea", facts("cluster16_pfs", "demo"), {})
    assert reasons == [
        "compute hosts lack numeric properties (hosts lacking, of 16): 'cores' (16), 'memory_bytes' (16), "
        "'link_bandwidth' (16)",
        "jobs lack fields (jobs lacking, of 48): 'cores' (48), 'file' (48), 'file_bytes' (48)",
        "31 of 48 jobs ask for more than one host (e.g. job 1: 8)"]
    # CATIOS reads B from a storage host's property; Stria's four OSTs carry none.
    assert unmet_requirements("catios-oracle", facts("stria15_lustre", "stria_w2"), {}) == [
        "needs exactly one storage host with property 'bandwidth', found 0",
        "jobs lack fields (jobs lacking, of 1550): 'io_demand' (1550)"]
    # List scheduling's default bandwidth is periodic_rack's I/O node, io_aware's limit Stria's file
    # system: elsewhere the input must give them.
    assert unmet_requirements("iolist", facts("stria15_lustre", "stria_w2"), {}) == [
        "needs option 'bandwidth' from the input (its default describes periodic_rack), which this input does not give"]
    assert unmet_requirements("iolist", facts("stria15_lustre", "stria_w2"), {"bandwidth": 1e9}) == []
    assert unmet_requirements("io_aware", facts("cluster16_pfs", "demo"), {"bandwidth": 1e9}) == [
        "needs option 'limit' from the input (its default describes stria15_lustre), which this input does not give"]
    assert unmet_requirements("io_aware", facts("cluster16_pfs", "demo"), {"limit": 0.93}) == []
    # The slice's jobs each need their input file loaded, which only the locality policies do:
    # a baseline would run them without any load.
    assert unmet_requirements("fcfs", facts("memcluster486", "memcluster486_slice"), {}) == [
        "1667 of 1667 jobs carry field 'file', work that only the policies of locality/locality.py carry out: "
        "this one would run the jobs without it"]


def test_every_catalog_name_declares_what_it_needs():
    for name in catalog.SCHEDULERS:
        assert set(catalog.declaration(name).requires) <= set(requirements.REQUIREMENT_KEYS)
    assert catalog.declaration("tioas-oracle").requires["job_fields"] == ("io_demand",)
    assert catalog.declaration("tioas").requires["job_fields"] == ("command",)
    # A host property given as an option need not be on the hosts.
    assert catalog.declaration("lea", {"cores": 4}).requires["host_properties"] == ("memory_bytes", "link_bandwidth")


def test_the_bundled_matrix_plans_each_family_only_where_it_fits(tmp_path):
    matrix = load_matrix(CONFIG, small=True)
    assert {item.jobs for item in matrix.inputs} == {20} and matrix.schedulers == list(catalog.SCHEDULERS)
    runs, skipped, summaries = plan_matrix(matrix, tmp_path)
    ran = {(run.policy, run.workload) for run in runs if run.kind == "policy"}
    skips = {(skip.policy, skip.workload) for skip in skipped}
    assert len(ran) + len(skips) == len(matrix.inputs) * len(catalog.SCHEDULERS)
    assert {workload for policy, workload in ran if policy == "lea"} == {"memcluster486_slice-first20"}
    assert {workload for policy, workload in ran if policy == "catios"} == {"catios_bw-first20"}
    assert {workload for policy, workload in ran if policy == "equilibrio"} == {"equilibrio_theta-first20"}
    assert {policy for policy, workload in ran if workload == "memcluster486_slice-first20"} == {
        name for name in catalog.SCHEDULERS if catalog.SCHEDULERS[name][0] == "locality/locality.py"}
    assert {policy for policy, workload in ran if workload == "kth_sp2_first300-first20"} == {
        "fcfs", "easy", "conservative", "backfill", "easy-ljf"}
    # Stria has no single I/O node: list/pack scheduling is skipped there, run where the config gives one.
    assert ("iolist", "stria_w2-first20") in skips and ("iolist", "catios_bw-first20") in ran
    assert ("io_aware", "stria_w2-first20") in ran and ("io_aware", "equilibrio_theta-first20") in skips
    # No reference run (jobs alone) where the jobs do no I/O.
    assert not [run for run in runs if run.kind == "reference" and run.workload.startswith(("kth", "memcluster"))]


def test_config_errors_name_the_file_and_key(tmp_path):
    config = write_yaml(tmp_path, {"inputs": [{"platform": "cluster16_pfs", "workload": "demo"}],
                                   "schedulers": ["fcfs", "my_sched"]})
    with pytest.raises(InputError, match=r"matrix.yaml, field 'schedulers': not a catalog scheduler: 'my_sched'"):
        load_matrix(config)
    config = write_yaml(tmp_path, {"inputs": [{"platform": "cluster16_pfs", "workload": "demo", "job": 3}],
                                   "schedulers": "catalog"})
    with pytest.raises(InputError, match=r"field 'inputs\[0\]\.job': unknown key"):
        load_matrix(config)
    config = write_yaml(tmp_path, {"inputs": [{"platform": "cluster16_pfs", "workload": "demo"}] * 2,
                                   "schedulers": "catalog"})
    with pytest.raises(InputError, match=r"field 'inputs\[1\]': the same input twice: demo on cluster16_pfs"):
        load_matrix(config)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"nb_res": 1, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "p"}],
                                  "profiles": {}}))
    config = write_yaml(tmp_path, {"inputs": [{"platform": "cluster16_pfs", "workload": str(broken)}],
                                   "schedulers": "catalog"})
    with pytest.raises(InputError, match="broken.json.*job '1'"):
        load_matrix(config)
    config = write_yaml(tmp_path, {"inputs": [{"platform": "cluster16_pfs", "workload": "demo"}],
                                   "schedulers": "catalog"})
    with pytest.raises(InputError, match="--small needs a `small` section"):
        load_matrix(config, small=True)


# -- ranking ----------------------------------------------------------------------------------
def test_ranks_share_the_best_place_on_equal_shown_values_and_order_by_mean_rank():
    rows = pd.DataFrame({"policy": ["c", "a", "b"],
                         "makespan": [100.0, 100.04, 90.0],      # a and c show 100.0: tied
                         "mean_wait": [5.0, 1.0, 3.0]})
    ranked = rank_policies(rows, ["makespan", "mean_wait"])
    assert list(ranked["policy"]) == ["a", "b", "c"]   # a before b: the same mean rank, by name
    assert list(ranked["makespan_rank"]) == [2, 1, 2]
    assert list(ranked["mean_wait_rank"]) == [1, 2, 3]
    assert list(ranked["mean_rank"]) == [1.5, 1.5, 2.5]


# -- the page's findings ----------------------------------------------------------------------
def page_sections(text):
    """'## NAME' -> its text, in page order (the title's own text under '')."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(["", *parts[1::2]], [parts[0], *parts[2::2]]))


def ranking_rows(section):
    """The rows of a section's ranking table: (policy, {column heading: shown value}, mean rank)."""
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    header = next(line for line in lines if line.startswith("| # | policy"))[2:-2].split(" | ")
    rows = []
    for line in lines:
        cells = line[2:-2].split(" | ")
        if cells[0].isdigit():
            values = {name: float(cell.split(" (")[0]) for name, cell in zip(header[2:-1], cells[2:-1]) if cell != "-"}
            rows.append((cells[1], values, float(cells[-1])))
    return rows


def check_findings_agree_with_tables(text):
    """The page opens on its findings, and each one the tables below can check holds there:
    a policy named first alone heads its input's ranking with the mean ranks said; the gains over
    fcfs are those of the tables' shown values (the largest one's input, values and policy included)."""
    sections = page_sections(text)
    assert list(sections)[1] == "What was found" and sections[""].strip().startswith("# ")
    assert "Made by" not in "".join(list(sections.values())[:-1])
    found = sections["What was found"]
    rankings = {name: ranking_rows(body) for name, body in sections.items() if " on " in name}
    alone = re.findall(r"([^\s;:]+) on (\S+ on \S+) \(mean rank ([\d.]+), next ([\d.]+)\)", found)
    for policy, name, mean_rank, following in alone:
        (first, _, first_rank), (_, _, second_rank) = rankings[name][:2]
        assert (first, f"{first_rank:.2f}", f"{second_rank:.2f}") == (policy, mean_rank, following)
    gains = re.findall(r"(makespan|mean wait) ([\d.]+) % to ([\d.]+) % \(median ([\d.]+) %\), most on (\S+ on \S+) "
                       r"\(([^:]+): ([\d.]+)(?: s)? against ([\d.]+)", found)
    for label, low, high, median, name, best_policies, best, reference in gains:
        heading = next(heading for _, values, _ in rankings[name] for heading in values if heading.startswith(label))
        against = {name: rows for name, rows in rankings.items() if len(rows) >= 2 and "fcfs" in [r[0] for r in rows]}
        cut = {}
        for other, rows in against.items():
            fcfs = next(values[heading] for policy, values, _ in rows if policy == "fcfs")
            cut[other] = (fcfs - min(values[heading] for _, values, _ in rows)) / fcfs if fcfs else 0.0
        assert f"{100 * max(cut.values()):.1f}" == high and f"{100 * min(cut.values()):.1f}" == low
        assert f"{100 * float(pd.Series(list(cut.values())).median()):.1f}" == median
        assert f"{100 * cut[name]:.1f}" == high
        values = {policy: shown[heading] for policy, shown, _ in rankings[name]}
        assert (min(values.values()), values["fcfs"]) == (float(best), float(reference))
        assert values[best_policies.split(", ")[0]] == float(best)
    return found, alone, gains


def test_the_page_opens_on_findings_that_its_tables_bear_out(tmp_path):
    columns = ["policy", "makespan", "mean_wait", "mean_slowdown", "max_slowdown"]
    runs = {"a": [["fcfs", 200, 100, 4, 8], ["easy", 150, 50, 2, 4], ["io_aware", 160, 40, 3, 5]],
            "b": [["fcfs", 90, 10, 1.5, 2], ["easy", 90, 10, 1.5, 2]],   # the same schedule twice
            "c": [["easy", 50, 0, 1, 1]]}                                # nothing to compare
    table = pd.concat([pd.DataFrame(rows, columns=columns).assign(workload=name) for name, rows in runs.items()])
    table = table.assign(platform="p", status="ok", error="", mean_io_slowdown=float("nan"))
    summaries = [InputSummary("p", name, name, len(rows), len(rows), False) for name, rows in runs.items()]
    page = write_page(tmp_path / "matrix.md", table, [], summaries, made_by="Made by hand.")
    found, alone, gains = check_findings_agree_with_tables(page.read_text())
    # easy: ranks 1, 2, 1, 1 on a (mean 1.25), io_aware 2, 1, 2, 2 (1.75); on b easy and fcfs tie.
    assert found.strip().splitlines() == [
        "- **Most often first by mean rank** (alone or tied, of the inputs where the policy ran with others): "
        "easy (2 of 2).",
        "- **First alone by mean rank**: easy on a on p (mean rank 1.25, next 1.75); on the other 1 inputs two or "
        "more policies share first place.",
        "- **Gain over fcfs** (the best policy's value below fcfs's, over the 2 inputs where fcfs ran with "
        "others): makespan 0.0 % to 25.0 % (median 12.5 %), most on a on p (easy: 150.0 s against 200.0 s); "
        "mean wait 0.0 % to 60.0 % (median 30.0 %), most on a on p (io_aware: 40.0 s against 100.0 s).",
        "- **No difference between policies** on b on p (2 policies): equal values on every metric.",
        f"- {RESTS_ON}"]
    assert len(alone) == 1 and len(gains) == 2   # the check above read every statement it checks
    assert page_sections(page.read_text())["How this page was made"].strip() == "Made by hand."


def test_the_committed_matrix_page_opens_on_findings_that_its_tables_bear_out():
    found, alone, gains = check_findings_agree_with_tables(PAGE.read_text())
    assert alone and len(gains) == 2


# -- a tiny matrix, end to end ---------------------------------------------------------------
def backfill_case(folder):
    """Three delay jobs on cluster16_pfs's 16 hosts where EASY backfills job 3 and FCFS does not:
    FCFS runs 1 [0, 100], 2 [100, 200], 3 [200, 250]; EASY and conservative run 3 in [2, 52]."""
    jobs = [{"id": 1, "subtime": 0, "walltime": 100, "res": 10, "profile": "d100"},
            {"id": 2, "subtime": 1, "walltime": 100, "res": 16, "profile": "d100"},
            {"id": 3, "subtime": 2, "walltime": 50, "res": 6, "profile": "d50"}]
    path = Path(folder) / "backfill_case.json"
    path.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": {
        "d100": {"type": "delay", "delay": 100}, "d50": {"type": "delay", "delay": 50}}}))
    return path


def test_tiny_matrix_ranks_hand_checked_schedules_and_lists_skips(tmp_path):
    workload = backfill_case(tmp_path)
    config = write_yaml(tmp_path, {
        "schedulers": ["fcfs", "easy", "conservative", "io_aware", "lea", "iolist"],
        "inputs": [{"platform": "cluster16_pfs", "workload": str(workload)},
                   {"platform": "cluster16_pfs", "workload": "demo", "jobs": 4,
                    "options": {"bandwidth": 1000000000, "limit": 0.93}}]})
    out, page = tmp_path / "out", tmp_path / "matrix.md"
    assert main(["matrix", str(config), "--out", str(out), "--page", str(page), "--quiet"]) == 0
    results = pd.read_csv(out / "results.csv").set_index(["workload", "policy"])
    case = results.loc["backfill_case"]
    assert sorted(case.index) == ["conservative", "easy", "fcfs"]
    assert case.loc["fcfs", "makespan"] == pytest.approx(250, abs=0.01)
    assert case.loc["fcfs", "mean_wait"] == pytest.approx((0 + 99 + 198) / 3, abs=0.01)
    assert case.loc["fcfs", "max_slowdown"] == pytest.approx(248 / 50, abs=0.01)
    for policy in ("easy", "conservative"):
        assert case.loc[policy, "makespan"] == pytest.approx(200, abs=0.01)
        assert case.loc[policy, "mean_wait"] == pytest.approx(99 / 3, abs=0.01)
        assert case.loc[policy, "max_slowdown"] == pytest.approx(199 / 100, abs=0.01)
    # The demo's jobs do I/O: io_aware runs there, with the I/O slowdown from a reference run.
    # The input's options reach the policies that declare them, and those only.
    demo = results.loc["demo-first4"]
    assert set(demo.index) == {"fcfs", "easy", "conservative", "io_aware", "iolist"}
    assert demo["mean_io_slowdown"].notna().all()
    assert json.loads(demo.loc["iolist", "options"])["bandwidth"] == 1e9
    assert "limit" not in json.loads(demo.loc["iolist", "options"])
    assert json.loads(demo.loc["io_aware", "options"])["limit"] == 0.93
    assert "bandwidth" not in json.loads(demo.loc["io_aware", "options"])

    text = page.read_text()
    section = text.split("## backfill_case on cluster16_pfs")[1].split("## demo on")[0]
    ranking = [line for line in section.splitlines() if line.startswith("| ") and line[2].isdigit()]
    # Conservative and EASY tie first on every metric (then by name), FCFS is third on every one.
    assert [line.split(" | ")[1] for line in ranking] == ["conservative", "easy", "fcfs"]
    assert ranking[2].split(" | ")[2:] == ["250.0 (3)", "99.0 (3)", "2.650 (3)", "4.960 (3)", "3.00 |"]
    assert "mean I/O slowdown" not in section and "Its jobs do no I/O" in section
    assert ("| io_aware | no job moves bytes to or from storage (the profiles only compute or wait); needs option "
            "'limit' from the input (its default describes stria15_lustre), which this input does not give |"
            in section)
    assert "| lea | compute hosts lack numeric properties" in section
    assert "| backfill_case on cluster16_pfs | 3 | 3 | 3 | 0 |" in text   # jobs, ranked, skipped, failed
    assert ("| iolist | no job moves bytes to or from storage (the profiles only compute or wait); needs option "
            "'bandwidth' from the input (its default describes periodic_rack), which this input does not give |"
            in section)
    assert "mean I/O slowdown" in text.split("## demo on")[1]


def test_a_matrix_where_nothing_fits_runs_nothing_and_says_why(tmp_path):
    config = write_yaml(tmp_path, {"schedulers": ["io_aware", "lea"],
                                   "inputs": [{"platform": "kth_sp2", "workload": "kth_sp2_first300", "jobs": 5}]})
    out, page = tmp_path / "out", tmp_path / "matrix.md"
    assert main(["matrix", str(config), "--out", str(out), "--page", str(page), "--quiet"]) == 0
    assert not list((out / "runs").iterdir())
    text = page.read_text()
    assert "0 runs ranked, 2 pairs skipped, 0 runs failed, over 1 inputs." in text
    assert "| kth_sp2_first300 on kth_sp2 | 5 | 0 | 2 | 0 | - | - | - | - | n/a (no I/O) |" in text
    assert "| io_aware | no job moves bytes to or from storage" in text


@pytest.mark.slow
def test_the_small_matrix_runs_every_fitting_pair_without_failure(tmp_path):
    """`batio matrix scripts/sweeps/matrix.yaml --small` (CI's variant, about 2.5 min): every
    catalog policy either runs on an input or is skipped with a reason, and no run fails."""
    out, page = tmp_path / "out", tmp_path / "matrix.md"
    assert main(["matrix", str(CONFIG), "--small", "--out", str(out), "--page", str(page), "--quiet"]) == 0
    results = pd.read_csv(out / "results.csv")
    assert set(results["status"]) == {"ok"}
    text = page.read_text()
    skipped = int(text.split(" pairs skipped")[0].rsplit(", ", 1)[1])
    assert len(results) + skipped == len(load_matrix(CONFIG).inputs) * len(catalog.SCHEDULERS)
