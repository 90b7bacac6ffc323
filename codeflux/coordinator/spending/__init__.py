"""Money: the model gateway (the only code path that calls a model), budgets (reserve / settle / release),
price snapshots and the approvals a non-default model endpoint needs. Amounts are exact; unknown stays unknown."""
