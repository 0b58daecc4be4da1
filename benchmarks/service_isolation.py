"""Tenant isolation: one client floods, how much slower does another client get?

Starts `textenvs serve` with two clients (a token file). The victim steps its session at a
fixed rate over one keep-alive connection (open loop: latency counts from each request's
scheduled time); meanwhile the flooder, over several connections of its own, sends as fast
as the server answers one of:

- `long-commands`: steps of 1,000 U+FDFA (NFKC makes each 18 characters; the question
  pattern of today's parsers was quadratic in that), read in a worker process;
- `letter-runs`: steps of 20,000 `n`;
- `resets`: resets, past its rate limit (429s);
- `creates`: session creations, past its rate and session limits.

Prints the victim's p50/p99 per flood and the ratio to the quiet run (targets: p99 within
50 ms under adversarial commands; at most 2x the quiet p99 under a reset flood).

`--attacks` runs issue 35's attacks on any tenant instead (`benchmarks/service_attacks.py`:
memory around each attack, the bystander's latency against a quiet run on the same
server, the share of its fresh requests served, 5xx answers, the recording disk), each
side by side with another checkout's server with `--baseline`. `--kills N`: N recording
servers killed with SIGKILL while 4 players finish episodes; prints how many episodes
whose last answer a player saw are not recorded (target: 0).

    python -m benchmarks.service_isolation                  # 10 s per flood, 100 steps/s
    python -m benchmarks.service_isolation --duration 2 --floods resets   # smoke
    python -m benchmarks.service_isolation --attacks all --duration 8 --kills 6
    python -m benchmarks.service_isolation --attacks all --baseline ../old-checkout --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks import (
    service_attacks,
    service_attacks_stored,
    service_attacks_transport,  # noqa: F401 (registers its attacks)
)
from benchmarks._common import table
from benchmarks.service_load import exchange, serving

TOKENS = service_attacks.TOKENS
ATTACKS = service_attacks.ATTACKS  # registered by service_attacks_stored and _transport
FLOODS = ("long-commands", "letter-runs", "resets", "creates")
ENV = "treasure-hunt"


def _request(path: str, body: bytes, token: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _session(port: int, token: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps({"env": ENV, "seed": 1}).encode()
    status, data = await exchange(reader, writer, _request("/v1/sessions", body, token))
    if status != 201:
        raise RuntimeError(f"create failed: {status} {data[:200]!r}")
    return reader, writer, json.loads(data)["session_id"]


async def _victim(port: int, rate: float, duration: float) -> list[float]:
    reader, writer, sid = await _session(port, TOKENS["victim"])
    step = _request(f"/v1/sessions/{sid}/step", b'{"command":"wait"}', TOKENS["victim"])
    reset = _request(f"/v1/sessions/{sid}/reset", b"{}", TOKENS["victim"])
    latencies: list[float] = []
    start = time.perf_counter() + 0.5
    for i in range(int(rate * duration)):
        scheduled = start + i / rate
        await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
        status, _ = await exchange(reader, writer, step)
        if status == 409:  # the episode ended: a new one (not timed)
            status, _ = await exchange(reader, writer, reset)
        elif status != 200:
            raise RuntimeError(f"the victim's step failed: {status}")
        latencies.append(time.perf_counter() - scheduled)
    writer.close()
    return latencies


async def _flooder(port: int, flood: str, stop: asyncio.Event) -> int:
    token = TOKENS["flooder"]
    reader, writer, sid = await _session(port, token)
    if flood == "long-commands":
        request = _request(f"/v1/sessions/{sid}/step",
                           json.dumps({"command": "\ufdfa" * 1000}).encode(), token)  # fmt: skip
    elif flood == "letter-runs":
        request = _request(f"/v1/sessions/{sid}/step",
                           json.dumps({"command": "n" * 20_000}).encode(), token)  # fmt: skip
    elif flood == "resets":
        request = _request(f"/v1/sessions/{sid}/reset", b"{}", token)
    else:
        request = _request("/v1/sessions", json.dumps({"env": ENV}).encode(), token)
    sent = 0
    while not stop.is_set():
        status, _ = await exchange(reader, writer, request)
        sent += 1
        if status == 409:  # its episode ended
            await exchange(reader, writer, _request(f"/v1/sessions/{sid}/reset", b"{}", token))
    writer.close()
    return sent


async def _run(port: int, flood: str, args: argparse.Namespace) -> dict[str, float]:
    stop = asyncio.Event()
    floods = (
        [] if flood == "none" else [_flooder(port, flood, stop) for _ in range(args.connections)]
    )
    flooding = asyncio.gather(*floods)
    latencies = sorted(await _victim(port, args.rate, args.duration))
    stop.set()
    sent = sum(await flooding)
    pick = lambda q: 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    return {"p50_ms": pick(0.5), "p99_ms": pick(0.99), "flood_requests": sent}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--floods", default=",".join(FLOODS), help="comma list of " + ", ".join(FLOODS))
    p.add_argument("--rate", type=float, default=100.0, help="victim steps/s (100)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per flood (10)")
    p.add_argument("--connections", type=int, default=4, help="flooder connections (4)")
    p.add_argument(
        "--attacks",
        help="comma list of attacks on any tenant, or 'all': " + ", ".join(service_attacks.ATTACKS),
    )
    p.add_argument(
        "--baseline",
        type=Path,
        help="with --attacks: also run each against the server of this checkout (a "
        "row each, side by side)",
    )
    p.add_argument(
        "--repeat", type=int, default=1, help="with --attacks: runs per row (medians shown)"
    )
    p.add_argument("--kills", type=int, default=0, help="recording servers to kill -9 (0)")
    # an attacker's own process: attacks until SIGINT, then prints what it counted
    p.add_argument("--attack-only", nargs=2, metavar=("ATTACK", "PORT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.attack_only:
        name, port = args.attack_only
        print(json.dumps(service_attacks.run_attacker(name, int(port))))
        return 0
    if args.attacks:
        _attacks(args)
    if args.kills:
        lost, seen = service_attacks_stored.lost_episodes(args.kills)
        print(f"kill -9 x {args.kills}: {lost} of {seen} episodes the players saw finish are lost")
    if args.attacks or args.kills:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        tokens.write_text("".join(f"{name} {token}\n" for name, token in TOKENS.items()))
        options = ["--token-file", str(tokens), "--creates-per-minute", "60"]
        options += ["--resets-per-minute", "60", "--max-sessions", "100"]
        rows: dict[str, dict[str, float]] = {}
        for flood in ["none", *args.floods.split(",")]:
            # a server per row: the victim's own resets (one per finished episode) count
            # against its reset limit too, so rows sharing a server would measure the
            # victim's 429s from earlier rows, not the flood's effect
            with serving(*options) as (url, _):
                rows[flood] = asyncio.run(_run(int(url.rsplit(":", 1)[1]), flood, args))
    quiet = rows["none"]["p99_ms"]
    cells = [[flood, f"{r['p50_ms']:.1f}", f"{r['p99_ms']:.1f}", f"{r['p99_ms'] / quiet:.1f}x",
              f"{r['flood_requests']:.0f}"] for flood, r in rows.items()]  # fmt: skip
    print(
        table(["flood", "victim p50 ms", "victim p99 ms", "p99 / quiet", "flood requests"], cells)
    )
    return 0


def _attacks(args: argparse.Namespace) -> None:
    names = list(ATTACKS) if args.attacks == "all" else args.attacks.split(",")
    servers = [("", service_attacks.ROOT)]
    if args.baseline:
        servers.insert(0, (f" ({args.baseline.name})", args.baseline.resolve()))
    rows = []
    for name in names:
        for label, root in servers:
            runs = []
            for _ in range(args.repeat):
                try:
                    runs.append(service_attacks.measure(name, args.duration, args.rate, root))
                except RuntimeError as exc:  # e.g. an option the baseline's server lacks
                    print(name + label, "failed:", exc, flush=True)
                    break
                print(name + label, json.dumps(runs[-1]), flush=True)
            if not runs:
                rows.append([name + label, *["-"] * 12])
                continue
            r = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            rows.append([name + label, f"{r['peak_mb']:+.0f}", f"{r['after_mb']:+.0f}",
                         f"{r['quiet_p50']:.1f}", f"{r['p50']:.1f}", f"{r['p50_ratio']:.1f}x",
                         f"{r['p99_ratio']:.1f}x", f"{r['failures']:.0f}",
                         f"{100 * r['served']:.0f}%", f"{r['server_errors']:.0f}",
                         f"{r['size_refused']:.0f}", f"{r['disk_mb']:.1f}",
                         f"{r['sent']:.0f}"])  # fmt: skip
    header = ["attack", "RSS peak MB", "RSS after MB", "quiet p50 ms", "p50 ms",
              "p50 / quiet", "p99 / quiet", "failed steps", "fresh served", "5xx not 503",
              "413/431", "disk MB", "attacker"]  # fmt: skip
    print(table(header, rows))


if __name__ == "__main__":
    raise SystemExit(main())
