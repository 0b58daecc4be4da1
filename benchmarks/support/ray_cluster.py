"""A real Ray cluster on this machine for the tests: one head on loopback with 2 CPUs.

`ray start --head --block` runs in its own session, so every process of the cluster
(GCS, raylet, workers) is in one process group that `stop` ends, without `ray stop`
(which would end every Ray process of the user on the machine). Every port is picked
free, so two clusters (e.g. two pytest-xdist workers) never collide.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START_TIMEOUT_S = 120.0
WORKER_PORTS = 200


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalCluster:
    def __init__(self, cpus: int = 2) -> None:
        self.cpus = cpus
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        # Ray's socket paths must stay short: a fresh directory right under /tmp
        self.temp_dir = tempfile.mkdtemp(prefix="tray", dir="/tmp")
        self._proc: subprocess.Popen[bytes] | None = None
        self.log = Path(self.temp_dir) / "head.log"

    def start(self) -> LocalCluster:
        ray = str(Path(sys.executable).with_name("ray"))
        names = ["node-manager", "object-manager", "dashboard-agent-listen",
                 "dashboard-agent-grpc", "runtime-env-agent", "metrics-export"]  # fmt: skip
        ports = {name: free_port() for name in names}
        # the workers' range must hold none of the other ports (Ray refuses to start):
        # a free port picked at random once fell inside it
        taken = {self.port, *ports.values()}
        worker_lo = free_port()
        for _ in range(50):
            if not any(worker_lo <= port <= worker_lo + WORKER_PORTS for port in taken):
                break
            worker_lo = free_port()
        command = [
            ray, "start", "--head", "--block", "--disable-usage-stats",
            f"--port={self.port}", "--node-ip-address=127.0.0.1", f"--num-cpus={self.cpus}",
            "--include-dashboard=false", f"--temp-dir={self.temp_dir}",
            *(f"--{name}-port={port}" for name, port in ports.items()),
            f"--min-worker-port={worker_lo}", f"--max-worker-port={worker_lo + WORKER_PORTS}",
        ]  # fmt: skip
        with open(self.log, "wb") as log:
            self._proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                log = self.log.read_text()[-3000:]
                self.stop()
                raise RuntimeError(f"ray start failed:\n{log}")
            if b"Ray runtime started" in self.log.read_bytes():
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError("the Ray head did not start in time")

    def stop(self) -> None:
        if self._proc is None:
            return
        group = self._proc.pid  # the session leader's pid is the group id
        for sig, wait_s in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and _group_alive(group):
                time.sleep(0.2)
            if not _group_alive(group):
                break
        self._proc.wait(timeout=10)
        self._proc = None
        subprocess.run(["rm", "-rf", self.temp_dir], check=False)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
