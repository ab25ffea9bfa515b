"""tools/sweeplib/jobs.py when a job fails outside a point's programs (a bug, a full disk): the
error is kept for the caller, the other job's running program gets SIGTERM at once (it would
otherwise run on for hours), its point is marked interrupted, the failing point failed, and no
further point starts. Also when pinning itself fails. Real processes, fake points.
    python3 tests/sweep_jobs_errors.py"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))

from sweeplib.context import Context  # noqa: E402
from sweeplib.jobs import Jobs  # noqa: E402
from sweeplib.sweep_file import Point, Sweep  # noqa: E402


def context(names):
    sweep = Sweep(path="t.sweep", config="c.yaml", points=[Point(n, i + 1, []) for i, n in enumerate(names)])
    ctx = Context(sweep, out="unused", build="unused")
    ctx.runner.install()
    return ctx


def job_error_stops_the_others():
    ctx = context(["slow", "broken", "never"])
    started = threading.Event()

    def run_one(ctx, point, show):
        if point.name == "slow":
            started.set()
            ctx.runner.run(["sleep", "60"], None, None)  # SIGTERM'd by the other job's error
        elif point.name == "broken":
            started.wait(10)
            time.sleep(0.2)  # the sleep has started
            raise KeyError("a bug in a job")
        else:
            raise AssertionError("a point started after a job's error")

    begin = time.monotonic()
    jobs = Jobs(ctx, run_one)
    cpus = sorted(os.sched_getaffinity(0))
    interrupted = jobs.run([cpus, cpus])
    took = time.monotonic() - begin
    assert isinstance(jobs.error, KeyError), jobs.error
    assert interrupted == ["slow"], interrupted
    assert ctx.status == {"slow": "interrupted", "broken": "failed"}, ctx.status
    assert took < 10, f"the other job's program ran on for {took:.1f} s"
    print(f"ok: a job's KeyError stops the other job's program in {took:.1f} s; slow interrupted, "
          f"broken failed, never not started")


def pinning_error_is_kept():
    ctx = context(["a"])
    jobs = Jobs(ctx, lambda *_: None)
    jobs.run([[10 ** 6]])  # no such CPU: sched_setaffinity raises OSError
    assert isinstance(jobs.error, OSError), jobs.error
    print(f"ok: a job that cannot pin itself is an error of the sweep: {jobs.error!r}")


if __name__ == "__main__":
    job_error_stops_the_others()
    pinning_error_is_kept()
    print("PASS")
