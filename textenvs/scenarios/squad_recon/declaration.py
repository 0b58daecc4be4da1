"""This scenario's facts, declared once: the registry, the env class, gymnasium, the
adapters and the scripted agents read them from here (`textenvs.core.declaration`)."""

from textenvs.core.declaration import Scenario

SCENARIO = Scenario(
    name="squad-recon",
    title="Squad Reconnaissance and Elimination",
    version="6",
    gym_name="SquadRecon",
    order=3,
    entry_point="textenvs.scenarios.squad_recon.env:SquadReconEnv",
    scoring_entry_point="textenvs.scenarios.squad_recon.scoring:SquadReconScoring",
    scripted_entry_point="textenvs.agents.scripted.squad_recon:SquadReconPolicy",
)
