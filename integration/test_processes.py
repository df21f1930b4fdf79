"""What the Python integration tests share: waiting on a condition, and stopping a process by its
pid (dashboard_test.py, kubernetes_test.py)."""

import os
import signal
import subprocess
import time


def eventually(condition, timeout, what):
    """condition()'s first truthy value within `timeout` seconds, polled every 50 ms."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f'not within {timeout} s: {what}')
        time.sleep(0.05)


def stop_process(proc, timeout=60):
    """SIGTERM to `proc` by its pid, then SIGKILL if it has not exited within `timeout` s; its exit
    code."""
    if proc.poll() is not None:
        return proc.returncode
    os.kill(proc.pid, signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        return proc.wait()
