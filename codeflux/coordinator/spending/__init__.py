"""Money: the model gateway (the only code path that calls a model), budgets, the budget ledger (its one
writer: reserve / settle / release / record_unknown; the rules are ``codeflux.domain.budget``), price snapshots
and the approvals a non-default model endpoint needs. Amounts are exact; unknown stays unknown."""
