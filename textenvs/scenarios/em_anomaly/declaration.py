"""This scenario's facts, declared once: the registry, the env class, gymnasium, the
adapters and the scripted agents read them from here (`textenvs.core.declaration`)."""

from textenvs.core.declaration import Scenario

SCENARIO = Scenario(
    name="em-anomaly",
    title="Electromagnetic Field Anomaly Mapping",
    version="6",
    gym_name="EMAnomaly",
    order=2,
    entry_point="textenvs.scenarios.em_anomaly.env:EMAnomalyEnv",
    scoring_entry_point="textenvs.scenarios.em_anomaly.scoring:EMAnomalyScoring",
    scripted_entry_point="textenvs.agents.scripted.em_anomaly:EMAnomalyPolicy",
)
