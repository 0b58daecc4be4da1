"""verifiers' own eval runner on a textenvs environment, with the model on a loopback
server: what the harness benchmarks and the verifiers tests both play."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from benchmarks.support.openai_server import OpenAIServer


def vf_eval(env_config: Any, server: OpenAIServer | str, out: Path, *, rollouts: int = 1,
            concurrency: int | None = None, served: bool = True) -> list[Any]:  # fmt: skip
    """verifiers' eval runner (what its eval CLI runs) on `env_config` with the model on
    `server` (or at that base URL); the episodes, one trace each. `served`: the env runs
    in verifiers' env-server worker pool (its default, the path trainers use), else in
    this process (`--no-serve`, seconds faster to start)."""
    from verifiers.v1 import EvalClientConfig
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    # the loopback server takes any key (an unset variable sends "EMPTY")
    base_url = server if isinstance(server, str) else server.base_url
    client = EvalClientConfig(base_url=base_url, api_key_var="LOOPBACK_API_KEY")
    config = EvalConfig(env=env_config, model="test-model", client=client,
                        num_rollouts=rollouts, max_concurrent=concurrency, push=False,
                        rich=None, output_dir=out)  # fmt: skip
    if not served:
        config.serve = None
    return asyncio.run(run_eval(config))
