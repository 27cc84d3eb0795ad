package harness

import "fmt"

// stats are the statistics read from a {mean|avg, median|p50, pNN, std}
// object, by source name -> the convention's.
var stats = map[string]string{"mean": "mean", "avg": "mean", "median": "p50", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "std": "std"}

// latencyStats adds METRIC_STAT_ms for each statistic of the object at
// ptr, scaled by toMS (1000 for seconds); an absent object adds nothing.
func latencyStats(d doc, r *Run, ptr, metric string, toMS float64) error {
	obj, ok := d.get(ptr)
	if !ok || obj == nil {
		return nil
	}
	m, isObj := obj.(map[string]any)
	if !isObj {
		return fmt.Errorf("%s: %s: expected an object of statistics, got %s", d.pos(d.at[ptr]), ptr, kind(obj))
	}
	for src, stat := range stats {
		if _, ok := m[src]; !ok {
			continue
		}
		v, ok, err := d.number(ptr + "/" + src)
		if err != nil {
			return err
		}
		if ok {
			r.add(metric+"_"+stat+"_ms", v*toMS, ms, lower)
		}
	}
	return nil
}

// one adds a metric from a number at ptr, if there is one.
func one(d doc, r *Run, ptr, name, unit, direction string, scale float64) (float64, bool, error) {
	v, ok, err := d.number(ptr)
	if err != nil || !ok {
		return 0, false, err
	}
	r.add(name, v*scale, unit, direction)
	return v, true, nil
}
