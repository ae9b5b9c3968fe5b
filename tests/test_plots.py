"""The PNG figures of a run: what is drawn where, checked on the figure's own objects."""

from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
import pandas as pd

from batio.report.plots import draw_allocation
from batio.report.schedule_data import COLOURS

JOBS = pd.DataFrame({
    "job_id": ["w0!1", "w0!2", "w0!3"],
    "starting_time": [0.0, 5.0, 20.0],
    "execution_time": [10.0, 3.0, 2.5],
    "allocated_resources": ["0-1 4", "2", "3-5"],
    "final_state": ["COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED", "COMPLETED_SUCCESSFULLY"],
    "intensity": ["no I/O", ">= 100 GB", "no I/O"],
})


def _axes():
    return Figure().subplots()


def test_each_job_is_one_rectangle_per_interval_of_its_hosts():
    rectangles = draw_allocation(_axes(), JOBS)
    boxes = [tuple(path.get_extents().bounds) for path in rectangles.get_paths()]
    # (start, first host, execution time, number of hosts); "0-1 4" is two intervals
    assert boxes == [(0.0, 0.0, 10.0, 2.0), (0.0, 4.0, 10.0, 1.0), (5.0, 2.0, 3.0, 1.0), (20.0, 3.0, 2.5, 3.0)]


def test_a_job_that_did_not_succeed_has_red_edges_and_the_others_black():
    rectangles = draw_allocation(_axes(), JOBS)
    edges = [tuple(colour) for colour in rectangles.get_edgecolors()]
    black, red = to_rgba("black"), to_rgba("red")
    assert edges == [black, black, red, black]
    assert list(rectangles.get_linewidths()) == [0.3, 0.3, 1.2, 0.3]

def test_jobs_are_coloured_by_their_bytes_class_and_times_scaled_to_the_unit():
    rectangles = draw_allocation(_axes(), JOBS, unit=3600.0)
    faces = [tuple(colour) for colour in rectangles.get_facecolors()]
    assert faces == [to_rgba(COLOURS[name]) for name in ("no I/O", "no I/O", ">= 100 GB", "no I/O")]
    assert rectangles.get_paths()[2].get_extents().bounds[0] == 5.0 / 3600  # job 2 starts at 5 s


def test_labels_only_when_asked_and_only_for_long_enough_jobs():
    axes = _axes()
    draw_allocation(axes, JOBS, label_jobs=True, min_labelled=2.8)
    assert sorted(text.get_text() for text in axes.texts) == ["w0!1", "w0!1", "w0!2"]
    axes = _axes()
    draw_allocation(axes, JOBS)
    assert not axes.texts


def test_no_job_draws_an_empty_collection():
    assert draw_allocation(_axes(), JOBS.iloc[0:0]).get_paths() == []
