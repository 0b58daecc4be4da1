"""This scenario's facts, declared once: the registry, the env class, gymnasium, the
adapters and the scripted agents read them from here (`textenvs.core.declaration`)."""

from textenvs.core.declaration import Scenario

SCENARIO = Scenario(
    name="treasure-hunt",
    title="Inverted-Symbol Treasure Hunt Grid",
    version="6",
    gym_name="TreasureHunt",
    order=0,
    package=__package__,
)
