"""The type check (scripts/typecheck.py) sees the policy kit as it is imported
(``batio.schedulers...``): a policy that breaks a hook's signature fails it,
naming the policy's file and line. Were the kit ``Any`` again (plain mypy,
which does not know pyproject.toml's ``package-dir``), the check would pass.

The probes are checked with the kit's packages, not the whole project, on a
cache of this test's own (kept by pytest between runs): about 30 s cold, a
few seconds warm."""

from pathlib import Path
import subprocess
import sys
import textwrap

ROOT = Path(__file__).resolve().parent.parent

BROKEN = textwrap.dedent('''\
    from batio.schedulers.backfill import Backfill


    class BrokenProbe(Backfill):
        REQUIRES = {"storgae": True}

        def bandwidth_need(self, job, now: float) -> float:
            return 0.0

        def priority_key(self, job) -> tuple:
            return ()
''')
"""A misspelt requirement (Declared.REQUIRES) and two broken hooks:
Backfill.bandwidth_need returns a {resource: rate} mapping,
Backfill.priority_key also takes ``now``."""

FINE = textwrap.dedent('''\
    from collections.abc import Mapping

    from batio.schedulers.backfill import Backfill, RoundTracker


    class FineProbe(Backfill):
        REQUIRES = {"storage": True, "io": True}

        def bandwidth_need(self, job, now: float) -> Mapping[str, float]:
            return {"io": 1.0}

        def initialize_reservation_tracker(self, now: float) -> RoundTracker:
            return self.reservation_tracker(now)
''')


def test_a_policy_breaking_a_hook_fails_the_type_check_at_its_line(request, tmp_path):
    # The probes stay at one place too: mypy's cache knows a module by name,
    # and would report a moved probe's errors at its former path. Without
    # pytest's cache (-p no:cacheprovider), a cold check in a fresh folder.
    kept = getattr(request.config, "cache", None)
    cache, probes = ((kept.mkdir("typecheck"), kept.mkdir("typecheck-probes")) if kept
                     else (tmp_path / "cache", tmp_path))
    broken, fine = probes / "broken_probe.py", probes / "fine_probe.py"
    broken.write_text(BROKEN)
    fine.write_text(FINE)
    done = subprocess.run([sys.executable, "scripts/typecheck.py", "--cache-dir", str(cache),
                           "batio", "schedulers", "workloads", "platforms", str(broken), str(fine)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in done.stdout.splitlines() if ": error: " in line]
    assert done.returncode == 1, done.stdout + done.stderr
    places = [line.split(": error: ")[0].rsplit(":", 1) for line in errors]   # mypy shortens paths below cwd
    assert [((ROOT / path).resolve(), int(line)) for path, line in places] == [(broken.resolve(), 5),
                                                                               (broken.resolve(), 7),
                                                                               (broken.resolve(), 10)], done.stdout
    assert '"storgae"' in errors[0] and '"Requirements"' in errors[0], errors[0]
    for error, hook in zip(errors[1:], ("bandwidth_need", "priority_key")):
        assert f'"{hook}"' in error and 'supertype "batio.schedulers.backfill.Backfill"' in error, error
