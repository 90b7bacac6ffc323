"""Model providers: adapters, endpoint rules and price snapshots.

Owns: the :class:`~codeflux.providers.wire.ModelAdapter` port (one method, ``complete``) and its
adapters — Anthropic Messages API, OpenAI and OpenAI-compatible servers over Chat Completions, and the
scripted provider (not a model) — all HTTP to providers (one hardened httpx client per adapter:
environment proxies ignored, redirects refused, bounded reads, timeouts, documented retries), the
mapping of every httpx exception and provider error reply to the ``ProviderError`` family, the pure
endpoint rules for base URLs, and the shipped price snapshots. Keys are fetched from the OS credential
store at each call and registered with the redactor; nothing here stores state.

Only the model gateway calls an adapter's ``complete``.

May import: the standard library, ``codeflux.domain``, ``codeflux.credentials``, ``codeflux.redact``,
``httpx`` and ``pydantic``.
"""
