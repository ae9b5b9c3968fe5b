"""The Stria platforms and workloads of paper 000 (workloads/stria.py,
platforms/stria15_lustre*.xml, scripts/stria_fig4.py)."""

from collections import Counter
import json
from pathlib import Path

from conftest import script
import pytest

from batio.schedulers.jobio import bytes_moved, storage_labels
from batio.sweep import load_config, run_grid
from batio.workloads.stria import GiB, concurrent_writers, stria_workload

ROOT = Path(__file__).resolve().parents[1]
stria_fig4 = script("stria_fig4")

WAVE_MIX = {
    1: {"write8": 30, "sleep": 60},
    2: {"write8": 30, "write6": 30, "write4": 30, "write2": 70, "write1": 120, "sleep": 30},
}


@pytest.mark.parametrize("number, nb_waves, nb_jobs", [(1, 8, 720), (2, 5, 1550)])
def test_waves_have_the_papers_mix(number, nb_waves, nb_jobs):
    work = stria_workload(number, seed=1)
    jobs = work["jobs"]
    assert work["nb_res"] == 15 and len(jobs) == nb_jobs
    assert [job["id"] for job in jobs] == list(range(1, nb_jobs + 1))
    for wave in range(1, nb_waves + 1):
        apps = [job["app"] for job in jobs if job["wave"] == wave]
        assert Counter(apps) == WAVE_MIX[number]
        # phases in the paper's order: all jobs of one type, then the next
        assert list(dict.fromkeys(apps)) == list(WAVE_MIX[number])
    assert {job["res"] for job in jobs} == {1}
    assert {job["subtime"] for job in jobs} == {0.0}


def test_seed_reproducible_and_matters():
    assert stria_workload(2, seed=7) == stria_workload(2, seed=7)
    assert stria_workload(2, seed=7) != stria_workload(2, seed=8)


@pytest.mark.parametrize("number", [1, 2])
def test_bundled_workloads_are_seed_1(number):
    bundled = json.loads((ROOT / "workloads" / f"stria_w{number}.json").read_text())
    assert bundled == stria_workload(number, seed=1)


def test_wave_interval_delays_each_wave():
    jobs = stria_workload(1, seed=1, wave_interval=3000)["jobs"]
    assert {(job["wave"], job["subtime"]) for job in jobs} == {(w, (w - 1) * 3000.0) for w in range(1, 9)}


@pytest.mark.parametrize("number", [1, 2])
def test_profiles_move_k_times_10_gib_to_one_volume(number):
    work = stria_workload(number, seed=1)
    profiles = work["profiles"]
    for job in work["jobs"]:
        profile = profiles[job["profile"]]
        read, write = bytes_moved(profile, profiles, job["res"])
        if job["app"] == "sleep":
            assert (read, write) == (0, 0) and profile == {"type": "delay", "delay": 600}
            assert job["walltime"] > 600
        else:
            threads = int(job["app"].removeprefix("write"))
            assert (read, write) == (0, threads * 10 * GiB)
            [label] = storage_labels(profile, profiles)
            assert label in {f"ost{n}" for n in range(56)}


def test_concurrent_writers_are_k_write8_jobs_at_time_0():
    work = concurrent_writers(4, seed=3)
    assert len(work["jobs"]) == 4 and {job["subtime"] for job in work["jobs"]} == {0.0}
    assert {job["app"] for job in work["jobs"]} == {"write8"}
    assert all(bytes_moved(work["profiles"][job["profile"]], work["profiles"], 1) == (0, 80 * GiB)
               for job in work["jobs"])


# -- the platforms, simulated: a small grid of scripts/sweeps/stria_fig4.yaml (about 20 s) --
LITERAL, CONGESTED = "stria15_lustre", "stria15_lustre_congested"


@pytest.fixture(scope="module")
def throughput(tmp_path_factory):
    """{platform: {k: [GiB/s, one per seed]}}: aggregate write throughput of k
    concurrent write×8 jobs, for k in 1, 3, 6, 15 and seeds 1, 2, measured by
    the step script of Fig. 4 on the sweep's outputs."""
    folder = tmp_path_factory.mktemp("stria")
    writers = ", ".join(f'{{generator: "batio.workloads.stria:concurrent_writers", args: {{k: {k}}}, '
                        f'name: writers-{k:02d}}}' for k in (1, 3, 6, 15))
    config = folder / "fig4.yaml"
    config.write_text(f"platforms: [{LITERAL}, {CONGESTED}]\nworkloads: [{writers}]\nseeds: 2\n"
                      "io_slowdown: false\nschedulers: [easy]\n")
    table, counts, _ = run_grid(load_config(config), folder / "out", workers=2, progress=False)
    assert (table["status"] == "ok").all(), table["error"]
    return {platform: {k: [rate / GiB for rate in rates] for k, rates in by_k.items()}
            for platform, by_k in stria_fig4.rates_from_sweep(folder / "out").items()}


def mean_over_seeds(throughput, platform, k):
    return sum(throughput[platform][k]) / len(throughput[platform][k])


def test_a_write8_job_alone_writes_at_4_gib_per_s(throughput):
    assert throughput[LITERAL][1] == pytest.approx([4.0, 4.0], rel=0.02)


def test_throughput_is_concave_in_concurrent_writers_and_levels_at_15(throughput):
    ks = [0, 1, 3, 6, 15]
    curve = [0.0] + [mean_over_seeds(throughput, LITERAL, k) for k in ks[1:]]
    slopes = [(b - a) / (kb - ka) for ka, kb, a, b in zip(ks, ks[1:], curve, curve[1:])]
    assert all(later <= earlier + 0.05 for earlier, later in zip(slopes, slopes[1:])), (curve, slopes)
    assert slopes[-1] >= -0.05  # never lower with more writers, on average
    assert curve[-1] == pytest.approx(15.0, rel=0.03)


def test_congested_platform_sustains_2_6_gib_per_s_at_any_load(throughput):
    assert throughput[CONGESTED][1] == pytest.approx([2.6, 2.6], rel=0.02)
    assert throughput[CONGESTED][15] == pytest.approx([2.6, 2.6], rel=0.02)
