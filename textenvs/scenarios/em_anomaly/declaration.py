"""This scenario's facts, declared once: the registry, the env class, gymnasium, the
adapters and the scripted agents read them from here (`textenvs.core.declaration`)."""

from textenvs.core.declaration import Scenario

SCENARIO = Scenario(
    name="em-anomaly",
    title="Electromagnetic Field Anomaly Mapping",
    version="6",
    gym_name="EMAnomaly",
    order=2,
    package=__package__,
)
