package result

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// Metrics read and write the object result.json has: sorted by name as
// encoding/json sorts a map's keys, a repeated name keeping its last value
// as decoding into a map does.
func TestMetricsAsAMap(t *testing.T) {
	in := `{"ttft_ms":{"value":1,"unit":"ms","direction":"lower"},"a\u003cb":{"value":2},"ttft_ms":{"value":3,"unit":"ms"}}`
	var ms Metrics
	if err := json.Unmarshal([]byte(in), &ms); err != nil {
		t.Fatal(err)
	}
	want := Metrics{{Name: "a<b", Value: 2}, {Name: "ttft_ms", Value: 3, Unit: "ms"}}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("decoded %+v, want %+v", ms, want)
	}
	var asMap map[string]Metric
	if err := json.Unmarshal([]byte(in), &asMap); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	mapped, _ := json.Marshal(asMap)
	if string(got) != string(mapped) {
		t.Errorf("encoded %s, a map encodes %s", got, mapped)
	}
	if m, ok := ms.Get("ttft_ms"); !ok || m.Value != 3 {
		t.Errorf("Get(ttft_ms) = %+v, %v", m, ok)
	}
	if _, ok := ms.Get("tpot_ms"); ok {
		t.Error("Get found a metric that is not there")
	}
	ms.Set(Metric{Name: "b", Value: 4})
	ms.Set(Metric{Name: "ttft_ms", Value: 5})
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if !reflect.DeepEqual(names, []string{"a<b", "b", "ttft_ms"}) || ms[2].Value != 5 {
		t.Errorf("after Set: %+v", ms)
	}
	var empty Metrics
	if err := json.Unmarshal([]byte(`{}`), &empty); err != nil || empty == nil || len(empty) != 0 {
		t.Errorf("{} decoded to %#v, %v; want empty, not nil (as a map)", empty, err)
	}
	if err := json.Unmarshal([]byte(`[1]`), &empty); err == nil {
		t.Error("an array decoded as metrics")
	}
}

// The case codec's member lists are Case's and Metric's JSON members, in
// order: a field added without its entry fails here.
func TestCaseMembers(t *testing.T) {
	if err := jsonscan.CheckMembers(reflect.TypeFor[Case](), caseMembers.Names()); err != nil {
		t.Error(err)
	}
	if err := jsonscan.CheckMembers(reflect.TypeFor[Metric](), metricMembers.Names()); err != nil {
		t.Error(err)
	}
}
