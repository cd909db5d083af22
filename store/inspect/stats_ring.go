package inspect

// ReadStatsRing turns the fields of one stats hash (HGETALL of
// store.StatsKey(name); layout in the comment above BucketMS) into bucket ->
// counts, with the same rules the sampler applies: only fields of the exact
// form "<a|r|e><decimal bucket>" count, unparseable or negative counters read
// as zero. Package whatif folds such buckets into a demand series.
func ReadStatsRing(fields map[string]string) map[int64]Counts { return readRing(fields) }
