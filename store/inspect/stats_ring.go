package inspect

// ReadStatsRing turns the fields of one stats hash (HGETALL of the object's
// wire.StatsKey; layout documented above wire.BucketMS) into bucket ->
// counts, with the same rules the sampler applies: only fields of the exact
// form "<a|r|e><decimal bucket>" count, unparseable or negative counters read
// as zero. Package whatif folds such buckets into a demand series.
func ReadStatsRing(fields map[string]string) map[int64]Counts { return readRing(fields) }
