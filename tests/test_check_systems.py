"""scripts/check_systems.sh's table and exit status: pytest's counts, or the step of
scripts/test.sh that failed, and a non-zero exit when a system's tests fail. Its functions are
sourced, with logs made here (the check itself needs root, debootstrap and a network)."""

from pathlib import Path
import subprocess

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_systems.sh"
FAILED_SUITE = ("== test suite (pytest)\n..F..\n=========== 1 failed, 1056 passed, 12 skipped in 500.12s ===========\n"
                "scripts/test.sh: the test suite (pytest) check failed (exit status 1, its output is above).\n")
FAILED_LINT = ("== lint (ruff check .)\nFound 2 errors.\n"
               "scripts/test.sh: the lint (ruff check .) check failed (exit status 1, its output is above).\n")
PASSED = "== test suite (pytest)\n.....\n=========== 1057 passed, 12 skipped in 498.00s ===========\n"


def row(tmp_path, test_log, test_rc, demo_rc=0):
    """(the row, FAILED) of report_row for one system whose test log is ``test_log``."""
    (tmp_path / "sys-demo.log").write_text("outputs: out/demo/out_jobs.csv\n")
    (tmp_path / "sys-test.log").write_text(test_log)
    (tmp_path / "result").write_text(f"demo {demo_rc} 60\ntest {test_rc} 900\n3.13.5 4.0\nDebian GNU/Linux 13\n")
    done = subprocess.run(["bash", "-c", f'source "{SCRIPT}"; FAILED=0; report_row "$1" "$2"; echo "FAILED=$FAILED"',
                           "_", str(tmp_path / "result"), str(tmp_path / "sys")],
                          capture_output=True, text=True, check=True)
    table_row, failed = done.stdout.splitlines()
    return table_row, failed == "FAILED=1"


def test_failed_tests_show_pytests_counts_and_fail_the_check(tmp_path):
    table_row, failed = row(tmp_path, FAILED_SUITE, 1)
    assert "| 1 failed, 1056 passed, 12 skipped in 500.12s | 1 |" in table_row and "scripts/test.sh" not in table_row
    assert failed


def test_a_failed_step_before_the_suite_is_named(tmp_path):
    table_row, failed = row(tmp_path, FAILED_LINT, 1)
    assert "| FAILED: the lint (ruff check .) check, exit status 1 |" in table_row and failed


def test_passed_tests_pass_the_check(tmp_path):
    table_row, failed = row(tmp_path, PASSED, 0)
    assert table_row.startswith("| Debian GNU/Linux 13 | 3.13.5 | 4.0 | ok | 1057 passed, 12 skipped in 498.00s | 0 |")
    assert not failed
    assert row(tmp_path, PASSED, 0, demo_rc=1)[1]  # a failed demo fails the check too
