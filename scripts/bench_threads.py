"""What live actor threads cost one hand-over: the kernel's private or global futex hash, and SCHED_BATCH.

Two actors exchange 1-byte messages beside N actors that sleep (as running
delay jobs do); each case runs in a fresh process, as SimGrid allows one
engine per process and the futex hash is per process. Prints the round
trip in microseconds of CPU time (less disturbed by other work than wall
time). The last column adds what the engine also does, SCHED_BATCH (no
wake-up preemption, ``threads.no_wakeup_preemption``). See docs/performance.md.

    .venv/bin/python scripts/bench_threads.py [--sleepers 0,3000,6000] [--round-trips 3000]
"""

import argparse
import subprocess
import sys
import time

from bench_inputs import platform_xml


def round_trip_us(platform, sleepers, round_trips, global_hash, batch):
    import simgrid as sg

    from batio.engines.embedded.threads import no_wakeup_preemption, use_global_futex_hash
    if global_hash:
        use_global_futex_hash()
    if batch:
        no_wakeup_preemption()
    engine = sg.Engine(["bench_threads", "--log=root.thres:critical"])
    engine.load_platform(platform)
    hosts = engine.all_hosts
    measured = []

    def pinger():
        sg.this_actor.sleep_for(1)  # every sleeper has started and sleeps
        began = time.process_time()
        for index in range(round_trips):
            sg.Mailbox.by_name("ping").put(index, 1)
            sg.Mailbox.by_name("pong").get()
        measured.append((time.process_time() - began) / round_trips * 1e6)
        sg.Actor.kill_all()

    def ponger():
        while True:
            sg.Mailbox.by_name("ping").get()
            sg.Mailbox.by_name("pong").put(0, 1)

    for index in range(sleepers):
        sg.Actor.create(f"sleeper{index}", hosts[index % len(hosts)], sg.this_actor.sleep_for, 1e9)
    sg.Actor.create("ping", hosts[0], pinger)
    sg.Actor.create("pong", hosts[1], ponger)
    engine.run()
    return measured[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sleepers", default="0,3000,6000", help="comma-separated numbers of sleeping actors")
    parser.add_argument("--round-trips", type=int, default=3000)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: PLATFORM,SLEEPERS,GLOBAL,BATCH here
    args = parser.parse_args()
    if args.one:
        platform, sleepers, global_hash, batch = args.one.split(",")
        print(round_trip_us(platform, int(sleepers), args.round_trips, global_hash == "1", batch == "1"))
        return
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".xml") as platform:
        platform.write(platform_xml())
        platform.flush()
        print(f"{'sleeping actors':>15} {'private hash us':>16} {'global hash us':>15} {'+ SCHED_BATCH us':>17}")
        for sleepers in (int(count) for count in args.sleepers.split(",")):
            times = [float(subprocess.run([sys.executable, __file__, "--round-trips", str(args.round_trips),
                                           "--one", f"{platform.name},{sleepers},{global_hash},{batch}"],
                                          check=True, capture_output=True, text=True).stdout.split()[-1])
                     for global_hash, batch in ((0, 0), (1, 0), (1, 1))]
            print(f"{sleepers:>15} {times[0]:>16.0f} {times[1]:>15.0f} {times[2]:>17.0f}", flush=True)


if __name__ == "__main__":
    main()
