"""HTTP + WebSocket transport, launch/cookie security and static assets for `codeflux start`.
May import every codeflux package except cli."""
