"""HTTP + WebSocket transport, launch/cookie security and static assets for `codeflux start`.
May import services, the coordinator, domain, api and redact — never cli, never the store."""
