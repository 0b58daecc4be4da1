"""Core pieces shared by every scenario."""

from textenvs.core.env import ActionSchema, Event, TextEnv, Transition
from textenvs.core.parsing import Found, ParseError, resolve
from textenvs.core.phrases import PhraseGrammar
from textenvs.core.registry import SCENARIOS, Scenario, UnknownEnvError, get, make, names

__all__ = [
    "SCENARIOS",
    "ActionSchema",
    "Event",
    "Found",
    "ParseError",
    "PhraseGrammar",
    "Scenario",
    "TextEnv",
    "Transition",
    "UnknownEnvError",
    "get",
    "make",
    "names",
    "resolve",
]
