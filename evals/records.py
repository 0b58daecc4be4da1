"""An episode's record: the `episodes.jsonl` line `textenvs eval` writes for it, which
every score is read from (the headline, the skill figures, the summaries), whoever
played the episode: the eval runner, a band measurement, an adapter, a training run."""

from __future__ import annotations

from textenvs.core.scoring import Skills
from textenvs.episodes.record import EpisodeResult
from textenvs.evals.bands import episode_headline
from textenvs.evals.metrics import Key, Record
from textenvs.evals.skills import measure


def episode_record(
    result: EpisodeResult,
    key: Key,
    model: str | None,
    trajectory: str,
    skills: Skills | None = None,
) -> Record:
    """One `episodes.jsonl` line; `skills`: the episode's skill fields when already
    measured (`skills.measure`)."""
    usage = result.usage
    prompt = int(usage.get("prompt_tokens", usage.get("prompt", 0)))
    completion = int(usage.get("completion_tokens", usage.get("completion", 0)))
    total = int(usage.get("total_tokens", usage.get("total", prompt + completion)))
    cached = int(usage.get("cached_tokens", 0))
    # the llm agent's prompts: characters sent, and those repeating the previous request
    chars = {key: int(usage.get(key, 0)) for key in ("prompt_chars", "prefix_chars")}
    return {
        "env": key[0],
        **({"level": result.level} if result.level is not None else {}),
        "seed": key[1],
        "episode": key[2],
        "agent": result.agent,
        "model": model,
        "outcome": result.outcome,
        "success": result.success,
        "return": result.total_reward,
        "steps": result.steps,
        "invalid_actions": result.invalid_actions,
        "reasks": result.reasks,
        "tokens": {"prompt": prompt, "completion": completion, "total": total, "cached": cached},
        **({"prompt_cache": chars} if chars["prompt_chars"] else {}),
        "latency_s": round(result.latency_s, 4),
        "wall_s": round(result.wall_s, 4),
        "error": result.error,
        "trajectory": trajectory,
        "skills": measure(key[0], key[1], result.to_dict()) if skills is None else skills,
    }


def played_record(result: EpisodeResult, skills: Skills | None = None) -> Record:
    """The record of an episode played outside an eval run (no model named, no
    trajectory file): what an adapter or a training run reads its scores from."""
    return episode_record(result, (result.env, result.seed or 0, 0), None, "", skills)


def result_headline(result: EpisodeResult, skills: Skills | None = None) -> float | None:
    """An episode's headline metric, read from its record as `textenvs eval` reads it
    (None where the episode does not say)."""
    return episode_headline(result.env, played_record(result, skills))
