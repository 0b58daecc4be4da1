"""One package per scenario: state / rules / render / parse / scoring / env, and
`declaration.py`, its facts said once (name, title, version, gym id, scoring, scripted
baseline). The registry (`textenvs.core.registry`) finds every package here, so adding a
scenario edits no shared module."""
