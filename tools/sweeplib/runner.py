"""Running the sweep's programs (one at a time per job, --jobs jobs at once): SIGINT/SIGTERM
forwarded as one SIGTERM to every running child, the child's PR_SET_PDEATHSIG, a job's CPU
affinity, exit statuses described, and the sweep's timestamped messages."""
import ctypes
import datetime
import os
import signal
import subprocess
import sys
import threading

from .errors import Interrupted


def _load_libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _load_libc()
# Looked up once here, not in the child: between fork and exec, with --jobs' threads about, the
# child should only make the one system call (no dlsym, whose lock another thread may hold).
_PRCTL = _LIBC.prctl if _LIBC is not None and sys.platform.startswith("linux") else None
PR_SET_PDEATHSIG = 1
SIGTERM = int(signal.SIGTERM)


def _die_with_parent():
    """In the child: SIGTERM when the thread that started it dies (even by SIGKILL of the
    sweep), so that train checkpoints and stops rather than running on unwatched and holding its
    save_dir's lock."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0)


class Runner:
    """Runs programs for the sweep's jobs, one at a time per job (thread); SIGINT/SIGTERM to
    the sweep become one SIGTERM to every running program."""

    def __init__(self):
        self.children = set()
        self.signum = None
        self._lock = threading.RLock()  # the handler runs on the main thread, which may hold it

    def install(self):
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._on_signal)

    @staticmethod
    def pin(cpus):
        """The calling thread (a job), and so every program it starts from now on, runs on cpus:
        a child inherits the affinity of the thread that forks it, so nothing more runs between
        fork and exec than before."""
        os.sched_setaffinity(0, cpus)  # pid 0: the calling thread, on Linux

    def _on_signal(self, signum, _frame):
        self.stop(signum)

    def stop(self, signum):
        """As if the sweep got signum: every running program gets one SIGTERM, none starts."""
        self.signum = self.signum or signum
        with self._lock:
            children = list(self.children)
        for child in children:
            self._forward(child)

    @staticmethod
    def _forward(child):
        try:
            if child.returncode is None:
                os.kill(child.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    def run(self, cmd, stdout, stderr):
        """Exit status of cmd (negative: killed by that signal); Interrupted if we were signalled,
        whatever the status: train exits 0 when stopped by a signal, and is not finished."""
        if self.signum:
            raise Interrupted(self.signum)
        # Its own session: a Ctrl-C at the terminal reaches only the sweep, which forwards
        # one SIGTERM (a second SIGINT would make train die at once, without a checkpoint).
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                 start_new_session=True, preexec_fn=_die_with_parent)
        with self._lock:
            self.children.add(child)
        if self.signum:
            self._forward(child)  # the signal came while the child was being started
        rc = child.wait()
        with self._lock:
            self.children.discard(child)
        if self.signum:
            raise Interrupted(self.signum)
        return rc


# Where say() writes: the sweep's log is its stdout; tune_decoding.py prints its table there
# and sets this to sys.stderr.
messages = sys.stdout


def say(message):
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    messages.write(f"[sweep {stamp}] {message}\n")  # one write: the jobs' lines do not interleave
    messages.flush()


def describe_exit(rc):
    return f"signal {-rc}" if rc < 0 else f"exit status {rc}"
