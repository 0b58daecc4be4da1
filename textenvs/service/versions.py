"""The service's protocol version: what a client and a server compare before the first
episode, so that a version mismatch stops with one line instead of failing every episode.

The package version says nothing about the protocol (every development build is 0.1.0),
so the service numbers its API:

- API 1: the first service; `GET /v1/health` says no `api`, and a create with a `label`
  is `422` (an unknown field).
- API 2: sessions may carry a `label` (`DELETE /v1/sessions?label=` deletes them), and
  health says `api` and `oldest_client_api`.

A server serves clients of every API from `OLDEST_CLIENT_API` on (it never drops a field
an older client sends); a client reads the server's `api` (1 when absent) and adapts to it
or stops (`textenvs.service.client.ServiceClient.api`).
"""

from __future__ import annotations

SERVICE_API = 2
#: the oldest client API this server still serves in full
OLDEST_CLIENT_API = 1
#: the first API with session labels
LABELS_API = 2
