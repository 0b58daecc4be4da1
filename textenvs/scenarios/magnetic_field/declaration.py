"""This scenario's facts, declared once: the registry, the env class, gymnasium, the
adapters and the scripted agents read them from here (`textenvs.core.declaration`)."""

from textenvs.core.declaration import Scenario

SCENARIO = Scenario(
    name="magnetic-field",
    title="Magnetic Field Pattern Recognition",
    version="6",
    gym_name="MagneticField",
    order=1,
    entry_point="textenvs.scenarios.magnetic_field.env:MagneticFieldEnv",
    scoring_entry_point="textenvs.scenarios.magnetic_field.scoring:MagneticFieldScoring",
    scripted_entry_point="textenvs.agents.scripted.magnetic_field:MagneticFieldPolicy",
)
