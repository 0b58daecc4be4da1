"""WebSocket messages read one at a time and uncompressed (uvicorn's sans-I/O protocol,
bounded).

uvicorn hands every complete message of a socket read to the app's queue at once, and
negotiates permessage-deflate: one read of 300-byte compressed messages became a queue of
hundreds of 256 KB messages (180 MB for one socket, 630 MB for eight). Here:

- compression is not offered (`ws_per_message_deflate=False`, see `connections.py`), so a
  message costs the server what the client sent, in memory and in parsing time;
- the parser is fed one frame at a time, and nothing while a message waits for the app:
  the rest of the read waits unparsed, and reading pauses until the app takes the message.

So one socket holds at most one message waiting (at most `--max-body-bytes`, uvicorn's
`ws_max_size`), the one the app is answering, and about one socket read of raw bytes.
"""

from __future__ import annotations

from typing import Any

from uvicorn._types import ASGIReceiveEvent, ASGISendEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


def frame_size(buffer: bytes | bytearray) -> int | None:
    """The size in bytes of the WebSocket frame `buffer` starts with (RFC 6455 5.2: its
    header and payload), or None while its header is incomplete."""
    if len(buffer) < 2:
        return None
    length = buffer[1] & 0x7F
    header = 2
    if length >= 126:
        header += 2 if length == 126 else 8
        if len(buffer) < header:
            return None
        length = int.from_bytes(buffer[2:header], "big")
    if buffer[1] & 0x80:  # masked (every client frame is)
        header += 4
    return header + length


class OneMessageAtATime(WebSocketsSansIOProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unparsed = bytearray()
        self._frame_left = 0  # bytes of a frame the parser has begun and not seen whole

    def data_received(self, data: bytes) -> None:
        if not self.handshake_initiated:  # the opening handshake, which uvicorn passes whole
            super().data_received(data)
            return
        self._unparsed += data
        self._feed()

    async def receive(self) -> ASGIReceiveEvent:
        self._feed()  # the app wants a message: parse the next one
        return await super().receive()

    async def send(self, message: ASGISendEvent) -> None:
        await super().send(message)
        if message["type"] == "websocket.close":
            # The client's close frame may already wait unparsed (OpenEnv's client sends
            # a `close` message and its close frame at once): without it the closing
            # handshake waited out the client's 10 s close timeout.
            self._feed()

    def _feed(self) -> None:
        """Feeds the parser frame by frame until a message waits for the app (after the
        app closed, messages are dropped: the client's close frame is all it waits for);
        pauses reading while unparsed bytes remain."""
        while self._unparsed and (self.queue.empty() or self.close_sent):
            if self.transport.is_closing():
                return
            if not self._frame_left:
                size = frame_size(self._unparsed)
                if size is None:
                    break  # the next frame's header is not all here yet
                self._frame_left = size
            piece = bytes(self._unparsed[: self._frame_left])
            del self._unparsed[: len(piece)]
            self._frame_left -= len(piece)
            super().data_received(piece)
        if self._unparsed and not self.queue.empty() and not self.read_paused:
            self.read_paused = True  # uvicorn resumes reading once the app takes it
            self.transport.pause_reading()
