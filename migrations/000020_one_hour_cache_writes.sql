-- One-hour prompt-cache writes (issue 21, items 7/8): Anthropic bills a cache write kept for one hour at a
-- higher rate than the default 5-minute write, and reports the split (`usage.cache_creation`).
--
-- `price_snapshots` gains the 1-hour write rate as another exact numerator/denominator pair (NULL: no rate
-- published, so a reported 1-hour write is an unknown charge — never the 5-minute rate, never 0). Existing
-- revisions keep NULL: they never priced a 1-hour write.
--
-- `model_requests` gains the part of `cache_write_tokens` that was written for one hour (NULL: the provider did
-- not break its writes down, as every request recorded before this migration). It is a breakdown, like
-- `reasoning_tokens` of the output, so token totals (000019) are unchanged. The forward-only trigger of 000003
-- already refuses any change to an ended request, this column included.
ALTER TABLE price_snapshots ADD COLUMN cache_write_1h_num INTEGER
    CHECK (cache_write_1h_num IS NULL OR cache_write_1h_num >= 0);
ALTER TABLE price_snapshots ADD COLUMN cache_write_1h_den INTEGER
    CHECK (cache_write_1h_den IS NULL OR cache_write_1h_den >= 1)
    CHECK ((cache_write_1h_num IS NULL) = (cache_write_1h_den IS NULL));

ALTER TABLE model_requests ADD COLUMN cache_write_1h_tokens INTEGER
    CHECK (cache_write_1h_tokens IS NULL OR (cache_write_1h_tokens >= 0
           AND (cache_write_tokens IS NULL OR cache_write_1h_tokens <= cache_write_tokens)))
    CHECK (state NOT IN ('planned', 'in-flight') OR cache_write_1h_tokens IS NULL);
