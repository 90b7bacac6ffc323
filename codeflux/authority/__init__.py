"""Authority: classification, approvals, denials.

Classification (the ``classify`` package; its ``__init__`` maps each rule to the module that owns it)
is pure and table-driven: it turns a bound tool request into the capabilities it needs. Approvals bind
to exact operation identities; denials to a capability and an optional resource.

May import: codeflux.domain and codeflux.store (and the standard library).
"""
