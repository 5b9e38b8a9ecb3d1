-- A market-intel job paid with x402 `upto` keeps its authorization (the payment and the
-- requirements, as the facilitator takes them) and, once the job ended, what was settled under
-- it (docs/market-intel.md, "Paying for what a job used"). JSON; NULL for jobs paid exactly.
ALTER TABLE market_jobs ADD COLUMN payment TEXT;
