"""The list-versus-pack study (seed 001): periodic workload generators, the
paper's metrics on hand-computed schedules, I/O-aware list scheduling (strict
constraint) and pack scheduling (average constraint), end to end."""
import json
import math

from batsim.batsim import Job
from conftest import TESTS, TINY, script
import numpy as np
import pandas as pd
import pytest

from batio.schedulers.list_vs_pack import metrics as pm
from batio.schedulers.list_vs_pack.ioList import IoList, PeriodicJobInfo
from batio.schedulers.list_vs_pack.ioPack import IoPack, build_packs
from batio.schedulers.options import OptionError
from batio.workloads import periodic

ROOT = TESTS.parent
RACK = ROOT / "platforms" / "periodic_rack.xml"
IO_LIST = ROOT / "schedulers" / "list_vs_pack" / "ioList.py"
IO_PACK = ROOT / "schedulers" / "list_vs_pack" / "ioPack.py"
B = periodic.DEFAULT_BANDWIDTH
ALPHA_TOLERANCE = 1e-6  # stated in workloads/periodic.py


# -- generators ------------------------------------------------------------------

@pytest.mark.parametrize("family", ["M-BN", "M-No", "U-BN", "U-No"])
@pytest.mark.parametrize("alpha", [0.2, 0.5, 0.8, 1.0])
def test_generators_hit_the_requested_io_load(family, alpha):
    workload = periodic.generate(family, alpha, nb_jobs=40, seed=7)
    realised = periodic.alpha_of(workload)  # from the profiles, not the metadata
    assert realised == pytest.approx(alpha, abs=ALPHA_TOLERANCE)
    assert workload["alpha"] == pytest.approx(realised, abs=1e-12)
    assert workload["alpha_target"] == alpha
    for job in workload["jobs"]:
        assert 10 <= job["iterations"] <= 100 and 1 <= job["res"] <= periodic.DEFAULT_HOSTS
        assert job["alone_time"] == pytest.approx(job["iterations"] * job["period"])
        assert job["avg_bandwidth"] < B  # every job fits the I/O node alone
        assert job["subtime"] == 0


@pytest.mark.parametrize("family", ["M-BN", "U-No"])
def test_size_independent_volumes_hit_alpha_too(family):
    workload = periodic.generate(family, 0.6, nb_jobs=40, seed=7, volume_scaling="none")
    assert periodic.alpha_of(workload) == pytest.approx(0.6, abs=ALPHA_TOLERANCE)
    # The I/O time per iteration no longer grows with the job's size.
    jobs = workload["jobs"]
    ratio = [job["io_time"] / (job["compute_time"] * job["io_share"]) for job in jobs]
    assert max(ratio) == pytest.approx(min(ratio), rel=1e-3)
    with pytest.raises(periodic.WorkloadParameterError, match="volume_scaling"):
        periodic.generate(family, 0.6, 10, volume_scaling="nodes")


def test_generator_follows_the_papers_laws():
    mira = periodic.generate("M-No", 0.5, nb_jobs=400, seed=1)
    sizes = np.array([job["res"] for job in mira["jobs"]])
    # Discrete exponential of 512-node midplanes (lambda = 1.35e-4): mean ~7,000 nodes, ~14 hosts.
    assert 10 < sizes.mean() < 18 and (sizes <= 8).mean() > 0.35
    uniform = periodic.generate("U-No", 0.5, nb_jobs=400, seed=1)
    minutes = np.array([job["compute_time"] for job in uniform["jobs"]]) / 60
    assert minutes.min() >= 10 and minutes.max() <= 100
    assert set(job["res"] for job in uniform["jobs"]) == {1, 2, 4, 8, 16, 32, 64}
    # BN: the heavy kind gets more prevalent as alpha grows.
    heavy = [np.mean([job["io_kind"] == "heavy" for job in periodic.generate("M-BN", a, 200, seed=3)["jobs"]])
             for a in (0.3, 0.5, 0.7)]
    assert heavy[0] < heavy[1] < heavy[2]


@pytest.mark.parametrize("q_mean", [1, 2.5, 5, 17])
def test_uniform_sizes_have_the_requested_mean_on_powers_of_two(q_mean):
    law, capped = periodic.power_of_two_law(q_mean, 96)
    assert not capped and law.sum() == pytest.approx(1)
    assert (law * 2 ** np.arange(len(law))).sum() == pytest.approx(q_mean)
    law, capped = periodic.power_of_two_law(48, 96)  # the paper's formula asks this much
    assert capped and law == pytest.approx(np.full(7, 1 / 7))


def test_generator_is_seeded_and_records_its_filtering():
    first, again = (periodic.generate("U-BN", 0.6, 30, seed=5) for _ in range(2))
    assert first == again
    assert first != periodic.generate("U-BN", 0.6, 30, seed=6)
    generator = first["generator"]
    assert generator["attempts"] == 1 + sum(generator["rejected"].values())
    assert set(generator["rejected"]) == {"kappa", "concentration"}


@pytest.mark.parametrize("alpha", [0, -0.2, 1.01, float("nan"), "0.5", None, True])
def test_alpha_outside_0_1_is_a_clear_error(alpha):
    with pytest.raises(periodic.WorkloadParameterError, match=r"alpha .* must be in \(0, 1\]"):
        periodic.generate("M-BN", alpha, 10)


def test_other_invalid_parameters_are_clear_errors():
    with pytest.raises(periodic.WorkloadParameterError, match="empty workload"):
        periodic.generate("M-BN", 0.5, 0)
    with pytest.raises(periodic.WorkloadParameterError, match="unknown family 'M-XX'"):
        periodic.generate("M-XX", 0.5, 10)
    with pytest.raises(periodic.WorkloadParameterError, match="bandwidth"):
        periodic.generate("M-BN", 0.5, 10, bandwidth=0)
    with pytest.raises(periodic.WorkloadParameterError, match="no jobs"):
        periodic.alpha_of({"jobs": [], "profiles": {}})
    # On one host every job fills the machine, and alpha = 1 would need its
    # compute time to vanish: every draw is filtered out, and the error says so.
    with pytest.raises(periodic.WorkloadParameterError, match="no acceptable draw"):
        periodic.generate("U-No", 1.0, 3, nb_hosts=1)


def test_command_line_prints_the_realised_alpha(tmp_path, capsys):
    out = tmp_path / "w.json"
    assert periodic.main(["--family", "M-No", "--alpha", "0.4", "--jobs", "12", "--out", str(out)]) == 0
    assert "realised alpha = 0.400000" in capsys.readouterr().err
    assert json.loads(out.read_text())["alpha"] == pytest.approx(0.4, abs=ALPHA_TOLERANCE)
    with pytest.raises(SystemExit):
        periodic.main(["--family", "M-No", "--alpha", "1.5"])
    assert "must be in (0, 1]" in capsys.readouterr().err


# -- metrics on a hand-computed schedule --------------------------------------------
# P = 4. A: 2 hosts, 2 x (10 s compute + 5 s I/O), alone 30 s, ran [0, 30]: stretch 1.
#        B: 2 hosts, 1 x 20 s compute, ran [0, 40]: stretch 2 (slowed down).
#        C: 4 hosts, 1 x 10 s compute, ran [40, 50]: stretch 1.
# Work (host-s of compute): A 2*2*10 = 40, B 40, C 40: U(50) = 120 / 200 = 0.6.
# Allocated host-time 2*30 + 2*40 + 4*10 = 180 of 200: idle ratio 0.1.
# Work done by 40: A 40 + B 40 = 80: U(40) = 80 / 160 = 0.5.
# Work rate: [0, 30) 40/30 + 1 host; [30, 40) 1; [40, 50) 4.

def hand_run(tmp_path):
    meta = {"A": (2, 2, 10, 5), "B": (2, 1, 20, 0), "C": (4, 1, 10, 0)}
    workload = {"nb_res": 4, "profiles": {}, "jobs": [
        {"id": name, "res": q, "iterations": n, "compute_time": w, "io_time": t, "period": w + t,
         "alone_time": n * (w + t), "avg_bandwidth": B * t / (w + t), "io_volume": B * t}
        for name, (q, n, w, t) in meta.items()]}
    rows = [("A", 0, 30, "2-3"), ("B", 0, 40, "0-1"), ("C", 40, 50, "0-3")]
    pd.DataFrame([{"job_id": name, "workload_name": "w0", "final_state": "COMPLETED_SUCCESSFULLY",
                   "starting_time": s, "finish_time": f, "execution_time": f - s, "waiting_time": s,
                   "allocated_resources": hosts, "metadata": ""} for name, s, f, hosts in rows]
                 ).to_csv(tmp_path / "out_jobs.csv", index=False)
    return pm.load_jobs(tmp_path / "out", workload), workload


def test_metrics_on_a_hand_computed_schedule(tmp_path):
    jobs, workload = hand_run(tmp_path)
    assert dict(zip(jobs["job_id"], pm.stretches(jobs))) == pytest.approx({"A": 1, "B": 2, "C": 1})
    assert pm.utilisation(jobs, 4) == pytest.approx(0.6)
    assert pm.idle_ratio(jobs, 4) == pytest.approx(0.1)
    assert pm.cumulative_utilisation(jobs, 4, [30, 40, 50]) == pytest.approx([(40 + 30) / 120, 0.5, 0.6])
    assert pm.instant_utilisation(jobs, 4, [0, 30, 40, 50]) == pytest.approx([(40 / 30 + 1) / 4, 0.25, 1.0])
    usage = pm.resource_usage(jobs, 4, B, [0, 30, 40, 50])
    assert usage["running_jobs"] == pytest.approx([2, 1, 1])
    assert usage["hosts"] == pytest.approx([1, 0.5, 1])
    assert usage["bandwidth_planned"] == pytest.approx([1 / 3, 0, 0])
    assert pm.lower_bound(workload, 4) == pytest.approx((2 * 30 + 2 * 20 + 4 * 10) / 4)


# -- schedulers: hand-computed decisions on delay jobs carrying I/O metadata -------------
# The schedulers plan with the jobs' metadata only, so delay profiles on the
# 4-host tiny.xml make hand-computable schedules (bandwidth b = 1e9 as an option).

def metadata_workload(jobs):
    """jobs: name -> (hosts, duration, average bandwidth as a fraction of b)."""
    return {"nb_res": 4,
            "jobs": [{"id": name, "subtime": 0, "walltime": 1000, "res": q, "profile": f"d{name}",
                      "alone_time": d, "avg_bandwidth": share * 1e9, "period": d, "iterations": 1}
                     for name, (q, d, share) in jobs.items()],
            "profiles": {f"d{name}": {"type": "delay", "delay": d} for name, (_, d, _) in jobs.items()}}


def starts(run):
    jobs = run.jobs.sort_index()
    return dict(zip(jobs.index.astype(str), jobs["starting_time"].astype(float)))


def test_list_scheduling_keeps_the_running_averages_under_the_bandwidth(simulate_workload):
    """J1-J3 (0.6 b each) cannot run together although hosts are free: one at a
    time. J4 (0.3 b) backfills next to J1, ending before J2's reservation."""
    work = metadata_workload({"J1": (1, 10, 0.6), "J2": (1, 10, 0.6), "J3": (1, 10, 0.6), "J4": (1, 10, 0.3)})
    run = simulate_workload(work, platform=TINY, scheduler=IO_LIST, options={"bandwidth": 1e9})
    assert starts(run) == pytest.approx({"J1": 0, "J2": 10, "J3": 20, "J4": 0}, abs=1e-3)
    plain = simulate_workload(work, platform=TINY, scheduler=ROOT / "schedulers" / "backfill.py")
    assert set(starts(plain).values()) == {0}


@pytest.mark.parametrize("backfill, expected", [(False, {"J1": 0, "J2": 0, "J3": 20, "J4": 20}),
                                                (True, {"J1": 0, "J2": 0, "J3": 20, "J4": 10})])
def test_pack_scheduling_hand_computed(simulate_workload, backfill, expected):
    """Max packs: {J1, J2} (4 hosts; (0.5*20 + 0.8*10) / 20 = 0.9 b), then {J3, J4}.
    At 10 J2 ends: 2 idle hosts until 20, I/O budget 1 * 10 - 0.5 * 10 = 5 b-s.
    J3 (6 b-s) does not fit it; J4 (0.5 b-s, 5 s) does."""
    work = metadata_workload({"J1": (2, 20, 0.5), "J2": (2, 10, 0.8), "J3": (2, 10, 0.6), "J4": (1, 5, 0.1)})
    run = simulate_workload(work, platform=TINY, scheduler=IO_PACK,
                            options={"packs": "max", "backfill": backfill, "bandwidth": 1e9})
    assert starts(run) == pytest.approx(expected, abs=1e-3)
    meta = run.jobs.sort_index()["metadata"].tolist()
    assert meta == ["pack=1;backfilled=0", "pack=1;backfilled=0", "pack=2;backfilled=0",
                    f"pack={1 if backfill else 2};backfilled={int(backfill)}"]


def fake_job(name, res, alone, period, share):
    return Job(f"w0!{name}", 0.0, 1000, res, "p", {"alone_time": alone, "period": period,
                                                   "avg_bandwidth": share * B})


def test_pack_variants_sort_as_the_paper_says():
    jobs = [fake_job("a", 1, 100, 1, 0.1), fake_job("b", 1, 50, 5, 0.1), fake_job("c", 1, 80, 2, 0.1)]

    def order(variant, seed=0):
        scheduler = IoPack({"packs": variant, "seed": seed})
        return [job.id[3:] for job in sorted(jobs, key=scheduler.sort_key)]

    assert order("Max") == ["a", "c", "b"]      # non-increasing duration
    assert order("Char") == ["b", "c", "a"]     # non-increasing characteristic time
    assert order("Random", 1) == order("Random", 1)
    assert len({tuple(order("Random", seed)) for seed in range(10)}) > 1


@pytest.mark.parametrize("family", ["M-BN", "U-No"])
def test_every_pack_meets_the_average_constraint(family):
    workload = periodic.generate(family, 0.9, nb_jobs=80, seed=2)
    jobs = workload["jobs"]
    for key in ("alone_time", "period", "id"):
        packs = build_packs(sorted(jobs, key=lambda job: -job[key]), 96, B, lambda job: job["res"],
                            lambda job: job["avg_bandwidth"] * job["alone_time"], lambda job: job["alone_time"])
        assert sorted(job["id"] for pack in packs for job in pack.jobs) == sorted(job["id"] for job in jobs)
        assert len(packs) > 3
        for pack in packs:
            assert sum(job["res"] for job in pack.jobs) <= 96
            volume = sum(job["io_volume"] * job["iterations"] for job in pack.jobs)
            assert volume / max(job["alone_time"] for job in pack.jobs) <= B * (1 + 1e-9)
            assert pack.average_bandwidth <= B * (1 + 1e-9)


def running_average_peak(jobs):
    """Highest sum of the running jobs' average bandwidths, over the run."""
    events = sorted([(s, 1, bw) for s, bw in zip(jobs["start"], jobs["avg_bandwidth"])]
                    + [(f, 0, -bw) for f, bw in zip(jobs["finish"], jobs["avg_bandwidth"])])
    level = peak = 0.0
    for _, _, delta in events:  # ends before starts at the same instant
        level += delta
        peak = max(peak, level)
    return peak


def test_list_scheduling_strict_constraint_over_a_run(simulate_workload, tmp_path):
    workload = periodic.generate("M-BN", 0.8, nb_jobs=30, seed=4)
    run = simulate_workload(workload, platform=RACK, scheduler=IO_LIST, io_exclusive=True,
                            io_sample_period=100.0)
    jobs = pm.load_jobs(run.prefix, workload)
    assert (jobs["final_state"] == "COMPLETED_SUCCESSFULLY").all()
    peak = running_average_peak(jobs)
    assert 0.5 * B < peak <= B * (1 + 1e-9)  # the constraint binds, and holds
    assert pm.stretches(jobs).min() >= 1 - 1e-6


def test_pack_scheduling_end_to_end_packs_meet_the_average_constraint(simulate_workload):
    workload = periodic.generate("U-BN", 0.8, nb_jobs=30, seed=4)
    run = simulate_workload(workload, platform=RACK, scheduler=IO_PACK,
                            options={"packs": "Char", "backfill": False}, io_sample_period=1000.0)
    jobs = pm.load_jobs(run.prefix, workload)
    assert (jobs["final_state"] == "COMPLETED_SUCCESSFULLY").all()
    packs = jobs.groupby("pack")
    assert packs.ngroups > 2
    for _, pack in packs:
        assert pack["start"].nunique() == 1  # started together
        volume = (pack["io_volume"] * pack["iterations"]).sum()
        assert volume / pack["alone_time"].max() <= B * (1 + 1e-9)
    # A pack starts when the previous one has ended.
    bounds = packs.agg(start=("start", "min"), end=("finish", "max")).sort_index()
    assert (bounds["start"].iloc[1:].to_numpy() >= bounds["end"].iloc[:-1].to_numpy() - 1e-6).all()
    # The first pack was built from the whole batch.
    order = sorted(workload["jobs"], key=lambda job: (-job["period"], job["id"]))
    first = build_packs(order, 96, B, lambda job: job["res"], lambda job: job["avg_bandwidth"] * job["alone_time"],
                        lambda job: job["alone_time"])[0]
    assert sorted(jobs.loc[jobs["pack"] == 1, "job_id"].astype(int)) == sorted(job["id"] for job in first.jobs)


def test_jobs_without_metadata_fall_back_to_their_profile_and_walltime():
    profiles = {"io": {"type": "parallel_homogeneous_pfs", "bytes_to_write": 1e9}}
    info = PeriodicJobInfo(lambda workload: profiles, bandwidth=1e9)
    job = Job("w0!x", 0.0, 100, 2, "io", {})
    assert info.duration(job) == 100
    assert info.average_bandwidth(job) == pytest.approx(2e9 / 100)
    assert info.predicted_end(job, 0.0, 50.0) == 100
    assert info.predicted_end(job, 0.0, 150.0) == 151  # late: one more period (1 s without metadata)
    greedy = Job("w0!y", 0.0, 100, 1, "io", {"avg_bandwidth": 5e9, "alone_time": 10})
    assert info.need(greedy) == 1e9  # planned at the limit: it will run alone, not never


def test_invalid_scheduler_options_are_clear_errors():
    with pytest.raises(OptionError, match=r"IoPack: option 'packs' = \"Best\" is not allowed"):
        IoPack({"packs": "Best"})
    with pytest.raises(OptionError, match="IoList: option 'bandwidth' = 0"):
        IoList({"bandwidth": 0})
    with pytest.raises(OptionError, match="unknown option 'pack'"):
        IoPack({"pack": "Max"})
    assert IoPack({"packs": "char"}).variant == "Char"
    assert math.isinf(IoList({}).backfill_max)


# -- the experiments: a sweep config's runs, tabled by scripts/periodic_experiments.py -----

def test_the_table_step_measures_the_sweeps_runs(tmp_path):
    """The paper's exclusive-I/O config cut to one workload of 20 jobs, run by ``batio sweep``;
    the step's summary and tables are the runs' schedules measured by hand."""

    import yaml

    from batio.sweep import load_config, run_grid
    step = script("periodic_experiments")
    config = yaml.safe_load((ROOT / "scripts" / "sweeps" / "periodic_lessons.yaml").read_text())
    config["workloads"] = [{**config["workloads"][-1], "args": {"family": "U-No", "alpha": 0.8, "jobs": 20}}]
    config["seeds"] = [1]
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(config))
    table, _, _ = run_grid(load_config(tmp_path / "small.yaml"), tmp_path / "sweep", workers=0, progress=False)
    assert set(table["status"]) == {"ok"} and json.loads(table.set_index("policy").loc["Random", "options"]) == {
        "packs": "Random", "seed": 1}

    assert step.main(["--from-sweep", str(tmp_path / "sweep"), "--results", str(tmp_path / "results")]) == 0
    summary = pd.read_csv(tmp_path / "results" / "periodic" / "summary.csv").set_index("strategy")
    assert sorted(summary.index) == ["Char", "LS", "Max", "Random"]
    assert set(summary["model"]) == {"exclusive"} and set(summary["index"]) == {1}
    workload = json.loads(next((tmp_path / "sweep" / "workloads").glob("*.json")).read_text())
    alone = {str(job["id"]): job["alone_time"] for job in workload["jobs"]}
    for row in table.itertuples():
        jobs = pd.read_csv(tmp_path / "sweep" / row.run_dir / "out_jobs.csv", dtype={"job_id": str})
        stretch = (jobs["finish_time"] - jobs["starting_time"]) / jobs["job_id"].map(alone)
        measured = summary.loc[row.policy]
        assert measured["makespan"] == pytest.approx(jobs["finish_time"].max())
        assert measured["mean_stretch"] == pytest.approx(stretch.mean())
        assert measured["max_stretch"] == pytest.approx(stretch.max())
        assert (measured["packs"] > 1) == (row.policy != "LS")  # LS makes no packs
    text = (tmp_path / "results" / "periodic.md").read_text()
    row = next(line for line in text.splitlines()[text.splitlines().index("**mean stretch**"):]
               if line.startswith("| 0.8 |"))
    assert row == "| 0.8 | " + " | ".join(
        f"**{value:.3f}**" if value == summary["mean_stretch"].min() else f"{value:.3f}"
        for value in summary.loc[["LS", "Random", "Max", "Char"], "mean_stretch"]) + " |"
    assert sorted(path.name for path in (tmp_path / "results" / "periodic").glob("fig*.png")) == [
        "fig4_5_cumulative_utilisation_exclusive.png", "fig4_5_instant_utilisation_exclusive.png",
        "fig6_max_stretch_exclusive.png", "fig7_mean_stretch_exclusive.png"]

    # --strategies keeps some; the same runs twice is an error, not a doubled mean.
    sweep = str(tmp_path / "sweep")
    assert step.main(["--from-sweep", sweep, "--strategies", "LS", "Max", "--results", str(tmp_path / "two")]) == 0
    assert sorted(pd.read_csv(tmp_path / "two" / "periodic" / "summary.csv")["strategy"]) == ["LS", "Max"]
    with pytest.raises(SystemExit, match="a second run of"):
        step.main(["--from-sweep", sweep, sweep, "--results", str(tmp_path / "twice")])
