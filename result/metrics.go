package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Metrics are a case's measured figures, one per name, sorted by name. In
// JSON they are the object result.json keys by name, its keys in that
// order (as encoding/json writes a map's).
//
// A slice, not a map: a case has a few metrics and a sweep tens of
// thousands of cases, and a map apiece was a third of the time and of
// the memory of decoding a 10,000-cell results.json (BenchmarkDecodeResults:
// 87 -> 59 ms, 57 -> 37 MB).
type Metrics []Metric

// Get returns the metric called name.
func (ms Metrics) Get(name string) (Metric, bool) {
	// A case has a few: a scan is as fast as a binary search.
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Set puts m in its place by name, replacing the metric of that name if
// there is one.
func (ms *Metrics) Set(m Metric) {
	i, found := slices.BinarySearchFunc(*ms, m.Name, func(a Metric, name string) int { return strings.Compare(a.Name, name) })
	if found {
		(*ms)[i] = m
		return
	}
	*ms = slices.Insert(*ms, i, m)
}

// sortedMetrics makes Metrics of the metrics in the order a JSON object
// listed them: sorted by name and, where a name repeats, the last one kept
// (as decoding the object into a map keeps it). It does not keep in; nil
// when in is empty.
func sortedMetrics(in []Metric) Metrics {
	if len(in) == 0 {
		return nil
	}
	// Insertion sort, stable: a case has a few metrics, often in order.
	for i := 1; i < len(in); i++ {
		for j := i; j > 0 && in[j].Name < in[j-1].Name; j-- {
			in[j], in[j-1] = in[j-1], in[j]
		}
	}
	n := 1
	for i := 1; i < len(in); i++ {
		if in[i].Name == in[n-1].Name {
			n--
		}
		in[n] = in[i]
		n++
	}
	return Metrics(slices.Clone(in[:n]))
}

// MarshalJSON writes the object keyed by name.
func (ms Metrics) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(m.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the object keyed by name; null leaves ms as it is.
func (ms *Metrics) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return fmt.Errorf("metrics: want an object, got %v", t)
	}
	var in []Metric
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		var m Metric
		if err := d.Decode(&m); err != nil {
			return err
		}
		m.Name = t.(string)
		in = append(in, m)
	}
	*ms = sortedMetrics(in)
	if *ms == nil {
		*ms = Metrics{}
	}
	return nil
}
