"""A trainer's burst: N OpenEnv clients (OpenEnv's own `EnvClient`, through
`textenvs.service.openenv_client.TextenvsEnv`, with no retries of ours) that each open a
WebSocket, reset and step three times, all at once, against `textenvs serve` with its
default settings (issue 42: 44 of 64 and 236 of 256 such clients failed, refused by the
creation and reset rates).

Rows: no tokens (every caller is one client), and a token file of two clients with the
burst from one of them (within its session allowance: half the server's 1,000). Each row
counts the clients that completed, those refused (an error or close naming a limit) and
those that failed otherwise, and the seconds the whole burst took.

    python -m benchmarks.service_burst                  # 64 and 256 clients, both rows
    python -m benchmarks.service_burst --clients 16 --steps 1
    python -m benchmarks.service_burst --baseline ../main       # and another checkout's
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._common import table
from benchmarks.service_load import ROOT, serving

ENV = "treasure-hunt"
#: what a refusal by the service's limits says (error codes, and the 1013 close reasons)
REFUSALS = ("rate_limited", "too_many_", "at_capacity", "1013")
TENANTS = {"trainer": "trainer-token-0123456789", "other": "other-token-0123456789ab"}


@dataclass
class Burst:
    clients: int
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return self.clients - len(self.errors)

    @property
    def refused(self) -> int:
        return sum(any(code in error for code in REFUSALS) for error in self.errors)


async def play(url: str, seed: int, steps: int, scenario: str = ENV) -> None:
    """One OpenEnv client: connect, reset on `seed`, `steps` steps, close."""
    from textenvs.service.openenv_client import TextenvsAction, TextenvsEnv

    async with TextenvsEnv.for_scenario(url, scenario) as env:
        await env.reset(seed=seed)
        for _ in range(steps):
            await env.step(TextenvsAction(command="wait"))


async def burst(url: str, clients: int, steps: int = 3, scenario: str = ENV) -> Burst:
    """`clients` OpenEnv clients playing at once (`play`); what became of each."""
    import textenvs.service.openenv_client  # noqa: F401  (imported before the clock starts)

    started = time.perf_counter()
    outcomes = await asyncio.gather(
        *(play(url, seed, steps, scenario) for seed in range(clients)), return_exceptions=True
    )
    result = Burst(clients, time.perf_counter() - started)
    result.errors = [f"{type(o).__name__}: {o}" for o in outcomes if isinstance(o, BaseException)]
    return result


def with_credentials(url: str, name: str, token: str) -> str:
    """`http://name:token@host:port`: OpenEnv's client sends it as Basic authorization."""
    return url.replace("http://", f"http://{name}:{token}@")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", default="64,256", help="comma list of burst sizes (64,256)")
    p.add_argument("--steps", type=int, default=3, help="steps per client after its reset (3)")
    p.add_argument("--baseline", type=Path, help="also run each row on this checkout's server")
    args = p.parse_args(argv)
    roots = {"": ROOT} if args.baseline is None else {"baseline, ": args.baseline, "": ROOT}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        tokens.write_text("".join(f"{name} {token}\n" for name, token in TENANTS.items()))
        settings = {"no tokens": (), "tokens, one tenant": ("--token-file", str(tokens))}
        for where, root in roots.items():
            for (setting, options), clients in itertools.product(
                settings.items(), map(int, args.clients.split(","))
            ):
                with serving(*options, root=root) as (url, _):  # a fresh server per row
                    if options:
                        url = with_credentials(url, "trainer", TENANTS["trainer"])
                    result = asyncio.run(burst(url, clients, args.steps))
                others = len(result.errors) - result.refused
                counts = [clients, result.completed, result.refused, others]
                rows.append([where + setting, *map(str, counts), f"{result.seconds:.2f}"])
                for error in result.errors[:2]:
                    print(f"  e.g. {error[:160]}")
    print(f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(table(["server", "clients", "completed", "refused", "other errors", "seconds"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
