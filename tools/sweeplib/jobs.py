"""--jobs N: the sweep's points N at a time, each job (a thread) on its own equal share of the
CPUs the sweep may use, taking the next point in file order when its point ends. On a machine
with many cores (or one GPU that a single 2-thread process leaves mostly idle) a search then
runs N points in the minutes of one."""
import collections
import os
import signal
import threading

from .errors import Interrupted, SweepError
from .runner import say


def cpu_slices(jobs, cpus=None):
    """The jobs' CPUs: cpus (default: the sweep's affinity) split into `jobs` equal disjoint runs
    of consecutive CPU numbers; the rest, when they do not divide, is left unused. SweepError when
    there are fewer CPUs than jobs."""
    cpus = sorted(os.sched_getaffinity(0) if cpus is None else cpus)
    if jobs < 1:
        raise SweepError(f"--jobs {jobs}: must be at least 1")
    if jobs > len(cpus):
        raise SweepError(f"--jobs {jobs}: the sweep may use only {len(cpus)} CPUs "
                         f"({format_cpus(cpus)}), fewer than one a job")
    size = len(cpus) // jobs
    return [cpus[i * size:(i + 1) * size] for i in range(jobs)]


def format_cpus(cpus):
    return ",".join(str(c) for c in cpus)


def warn_crowded(ctx, slices):
    """A point whose train.threads exceeds its job's CPUs still runs, on fewer cores than threads."""
    size = len(slices[0])
    for point in ctx.sweep.points:
        threads = int(ctx.resolved.get(point.name, {}).get("train.threads") or 1)
        if ctx.selected(point) and threads > size:
            say(f"point {point.name}: train.threads={threads} on a job of {size} CPUs: its threads share them")


class Jobs:
    """The worker threads: each pins its programs to its CPUs and runs points from one queue
    until the queue is empty, a signal came, or a job hit an error that is not a point's
    (then .error, which the caller raises after the tables are written)."""

    def __init__(self, ctx, run_one):
        self.ctx, self.run_one = ctx, run_one
        self.pending = collections.deque(ctx.sweep.points)
        self.interrupted = []  # the points a signal (or another job's error) stopped
        self.error = None      # the first exception a job raised outside a point's programs

    def next_point(self):
        with self.ctx.lock:
            if not self.pending or self.ctx.runner.signum or self.error:
                return None
            return self.pending.popleft()

    def work(self, cpus):
        point = None
        try:
            self.ctx.runner.pin(cpus)
            while (point := self.next_point()) is not None:
                self.run_one(self.ctx, point, show=False)
        except Interrupted:
            with self.ctx.lock:
                self.ctx.status[point.name] = "interrupted"
                self.interrupted.append(point.name)
        except BaseException as e:  # noqa: B036 - any error of a job ends the sweep, as in one job
            self.fail(e, point)

    def fail(self, error, point):
        """The first error of any job stops the sweep: the other jobs' programs get one SIGTERM
        (train checkpoints; a rerun resumes them) rather than running on for hours."""
        with self.ctx.lock:
            first = self.error is None
            self.error = self.error or error
            if point is not None:
                self.ctx.status[point.name] = "failed"
        if first:
            say(f"a job failed{f' in point {point.name}' if point else ''}: {error!r}; stopping the other jobs")
            self.ctx.runner.stop(signal.SIGTERM)

    def run(self, slices):
        """Run every point; the names of those a signal stopped, in file order (empty: none)."""
        threads = [threading.Thread(target=self.work, args=(cpus,), name=f"sweep-job-{i}", daemon=True)
                   for i, cpus in enumerate(slices)]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.5)  # short waits: the main thread stays free for signals
        order = [point.name for point in self.ctx.sweep.points]
        return sorted(self.interrupted, key=order.index)  # file order, whichever stopped first
