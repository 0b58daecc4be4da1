"""The `llm` agent: any OpenAI-compatible chat endpoint (see docs/llm-agent.md).

Names load lazily so the CLI can read the options without importing the openai client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textenvs.agents.llm.agent import LLMAgent
    from textenvs.agents.llm.config import LLMConfig

__all__ = ["LLMAgent", "LLMConfig"]


def __getattr__(name: str) -> Any:
    if name == "LLMAgent":
        from textenvs.agents.llm.agent import LLMAgent

        return LLMAgent
    if name == "LLMConfig":
        from textenvs.agents.llm.config import LLMConfig

        return LLMConfig
    raise AttributeError(name)
