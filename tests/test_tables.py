"""batio.outfiles: the one Markdown-table writer, against hand-written tables."""

from batio.outfiles import bold_best, markdown_table


def test_a_table_is_header_rule_and_rows_left_aligned_by_default():
    assert markdown_table(["policy", "makespan"], [["fcfs", "12.5"], ["easy", 3]]) == (
        "| policy | makespan |\n"
        "| --- | --- |\n"
        "| fcfs | 12.5 |\n"
        "| easy | 3 |")


def test_columns_from_align_right_from_on_are_right_aligned():
    table = markdown_table(["#", "policy", "wait", "stretch"], [[1, "easy", "4.0", "1.2"]], align_right_from=2)
    assert table.splitlines()[1] == "| --- | --- | ---: | ---: |"
    assert markdown_table(["a", "b"], [], align_right_from=0) == "| a | b |\n| ---: | ---: |"


def test_a_pipe_or_a_line_break_in_a_cell_cannot_break_its_row():
    table = markdown_table(["variant", "error"], [["delta' = |W - c|", "engine said:\nno host"]])
    assert table.splitlines() == ["| variant | error |", "| --- | --- |",
                                  "| delta' = \\|W - c\\| | engine said: no host |"]
    assert markdown_table(["a|b"], []).splitlines()[0] == "| a\\|b |"


def test_bold_best_marks_every_value_equal_to_the_best():
    assert bold_best([1.25, 1.0, 1.5, 1.0], "{:.2f}".format) == ["1.25", "**1.00**", "1.50", "**1.00**"]
    assert bold_best([0.7, 0.9, 0.8], "{:.1f}".format, best=max) == ["0.7", "**0.9**", "0.8"]


def test_a_row_key_of_several_parts_and_bold_cells_make_one_row():
    """periodic_experiments' tables: (family, alpha) as two columns, then one bold minimum per row."""
    rows = [["M-BN", "0.2", *bold_best([1.013, 1.016, 1.1], "{:.3f}".format)]]
    assert markdown_table(["family", "alpha", "Char", "LS", "Max"], rows) == (
        "| family | alpha | Char | LS | Max |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| M-BN | 0.2 | **1.013** | 1.016 | 1.100 |")
