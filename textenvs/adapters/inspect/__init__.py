"""Inspect adapter (`pip install 'textenvs[inspect]'`): every scenario as an Inspect task.

    inspect eval textenvs/treasure-hunt --model openai/gpt-4o-mini -T seeds=0-49
    inspect eval textenvs/all --model openai-api/vllm/Qwen3-8B -T seeds=0-9

Tasks (`tasks.py`) are registered through the package's `inspect_ai` entry point as
`textenvs/<scenario>` and `textenvs/all`. A sample is one episode (scenario, seed[,
reset options]). The default solver (`solver.py`) plays it as `textenvs eval --agent
llm` does, building each request with the same conversation code; the scorer
(`scorer.py`) reports per-scenario, normalised and skill metrics. `mode="tools"`
(`tools.py`) makes the scenario a tool-using environment for any Inspect agent.
"""

from textenvs.adapters.inspect.scorer import episode_outcome, scenario_scores
from textenvs.adapters.inspect.solver import InspectModelAgent, play_episode
from textenvs.adapters.inspect.tasks import samples, scenario_task
from textenvs.adapters.inspect.tools import env_command, start_episode

__all__ = [
    "InspectModelAgent",
    "env_command",
    "episode_outcome",
    "play_episode",
    "samples",
    "scenario_scores",
    "scenario_task",
    "start_episode",
]
