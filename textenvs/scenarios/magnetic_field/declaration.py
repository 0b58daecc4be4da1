"""This scenario's facts, declared once: the registry, the env class, gymnasium, the
adapters and the scripted agents read them from here (`textenvs.core.declaration`)."""

from textenvs.core.declaration import Scenario

SCENARIO = Scenario(
    name="magnetic-field",
    title="Magnetic Field Pattern Recognition",
    version="6",
    gym_name="MagneticField",
    order=1,
    package=__package__,
)
