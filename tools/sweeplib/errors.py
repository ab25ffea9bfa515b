"""The sweep's exceptions and exit statuses: bad input (exit 2), a failed point (exit 1 at the
end), a signal (exit 128 + signal)."""

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class SweepError(Exception):
    """Bad input: one message, exit 2, nothing run or written."""


class PointFailed(Exception):
    """A program of the point failed: message and the log to show the end of."""

    def __init__(self, message, log):
        super().__init__(message)
        self.log = log


class Interrupted(Exception):
    """SIGINT/SIGTERM reached the sweep: exit 128 + signal after the child stopped."""

    def __init__(self, signum):
        super().__init__(f"signal {signum}")
        self.signum = signum
