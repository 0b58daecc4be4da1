"""Transport hardening: what stands between a socket and the service's routes.

The session API (`textenvs.service.app`) is complete without this package's limits being
the only ones; they make `textenvs serve` safe to expose on its own (no proxy in front):

- `connections.py`: uvicorn's HTTP protocol wrapped (`uvicorn_settings`) with a request
  read timeout, a connection cap that evicts parked refusals first, a header size limit
  (431) and a bound on pipelined requests;
- `ws_reading.py`: uvicorn's WebSocket protocol reading one message at a time, without
  compression;
- `guards.py`: the ASGI middleware before every route (Host allow-list, authentication,
  each client's requests in flight, the pause before a refusal, body size and each
  client's body-byte allowance, a JSON 500 for a crash);
- `fairness.py`: clients take turns starting requests on the event loop;
- `sockets.py`: WebSockets counted against the cap and each client's share of it;
- `logs.py`: no query string (where a token may be put by mistake) in uvicorn's log.

Behind a reverse proxy (nginx, a cloud load balancer) some of these have an equal there:
the request read timeout (nginx `client_header_timeout`, `client_body_timeout`), the
connection cap (`limit_conn`, `worker_connections`), the header size limit
(`large_client_header_buffers`), pipelining (a proxy forwards one request at a time), the
body size limit (`client_max_body_size`) and the Host allow-list (`server_name`, for
requests that come through the proxy). The proxy does not replace the rest, which know
the client by its token rather than its address, or see inside the app: authentication
and each client's in-flight share, refusal pause and body-byte allowance (`guards.py`),
the eviction of connections holding only refused work, the turns between clients
(`fairness.py`), WebSockets per client (`sockets.py`), one WebSocket message at a time
(a proxy passes WebSocket frames through unread: `ws_reading.py`), the crash guard and
the log filter (uvicorn still logs what the proxy forwards). None of them limits how
long a command takes to read: that is the session API's own (`service/reading.py`).
"""
