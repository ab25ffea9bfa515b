"""Running the sweep's programs one at a time: SIGINT/SIGTERM forwarded as one SIGTERM, the
child's PR_SET_PDEATHSIG, exit statuses described, and the sweep's timestamped messages."""
import ctypes
import datetime
import os
import signal
import subprocess
import sys

from .errors import Interrupted


def _load_libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _load_libc()
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """In the child: SIGTERM when the sweep dies (even by SIGKILL), so that train checkpoints
    and stops rather than running on unwatched and holding its save_dir's lock."""
    if _LIBC is not None and sys.platform.startswith("linux"):
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Runner:
    """Runs one program at a time; SIGINT/SIGTERM to the sweep become one SIGTERM to it."""

    def __init__(self):
        self.child = None
        self.signum = None

    def install(self):
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, _frame):
        self.signum = self.signum or signum
        self._forward()

    def _forward(self):
        try:
            if self.child is not None and self.child.returncode is None:
                os.kill(self.child.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    def run(self, cmd, stdout, stderr):
        """Exit status of cmd (negative: killed by that signal); Interrupted if we were signalled,
        whatever the status: train exits 0 when stopped by a signal, and is not finished."""
        if self.signum:
            raise Interrupted(self.signum)
        # Its own session: a Ctrl-C at the terminal reaches only the sweep, which forwards
        # one SIGTERM (a second SIGINT would make train die at once, without a checkpoint).
        self.child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                      start_new_session=True, preexec_fn=_die_with_parent)
        if self.signum:
            self._forward()  # the signal came while the child was being started
        rc = self.child.wait()
        self.child = None
        if self.signum:
            raise Interrupted(self.signum)
        return rc


# Where say() writes: the sweep's log is its stdout; tune_decoding.py prints its table there
# and sets this to sys.stderr.
messages = sys.stdout


def say(message):
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    print(f"[sweep {stamp}] {message}", file=messages, flush=True)


def describe_exit(rc):
    return f"signal {-rc}" if rc < 0 else f"exit status {rc}"
