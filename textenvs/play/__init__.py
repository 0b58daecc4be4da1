"""The play page and its recorder: people play every scenario in the browser, and with
`--record DIR` their finished episodes become eval runs (docs/play.md).

It is an application on top of the env server, not part of it: `page.mount_play` puts the
page (`page.py`, its files in `static/`) on a service app, and `page.create_app` builds
the service app with the page on it (what `textenvs serve` and `textenvs play --web`
serve). The recorder (`record.py`, with `players.py`, `episodes.py` and `runs.py`)
replays each finished episode through the episode layer and writes it with the eval
code. Nothing is imported here, so the CLI can read the recording switches' defaults
without the web stack.
"""
