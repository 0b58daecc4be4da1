"""This scenario's facts, declared once: the registry, the env class, gymnasium, the
adapters and the scripted agents read them from here (`textenvs.core.declaration`)."""

from textenvs.core.declaration import Scenario

SCENARIO = Scenario(
    name="squad-recon",
    title="Squad Reconnaissance and Elimination",
    version="6",
    gym_name="SquadRecon",
    order=3,
    package=__package__,
)
