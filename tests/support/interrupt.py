"""A `textenvs` command in a child process that Ctrl-C can interrupt."""

from __future__ import annotations

import signal
import subprocess
import sys
from typing import Any


def interruptible(argv: list[str], **popen: Any) -> subprocess.Popen:
    """`textenvs ARGV` started with SIGINT at its default disposition, as under a
    terminal: a signal ignored by whatever started the suite (a background job of a shell
    script) is inherited through exec, and Python then never installs its
    KeyboardInterrupt."""
    default_sigint = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen([sys.executable, "-m", "textenvs.cli", *argv], **popen)
    finally:
        signal.signal(signal.SIGINT, default_sigint)
