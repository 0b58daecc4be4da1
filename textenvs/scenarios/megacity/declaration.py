"""This scenario's facts, declared once: the registry, the env class, gymnasium, the
adapters and the scripted agents read them from here (`textenvs.core.declaration`)."""

from textenvs.core.declaration import Scenario

SCENARIO = Scenario(
    name="megacity",
    title="Subterranean Megacity",
    version="7",
    gym_name="Megacity",
    order=4,
    package=__package__,
    reference_entry_point="textenvs.agents.scripted.megacity_reference:measure",
)
