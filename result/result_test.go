package result

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseResultErrors(t *testing.T) {
	tests := map[string]string{
		`{"schema_version": 1, "cell_id": "ac432f5e3d61", "cases": [{"id": "TC-01", "verdict": "MAYBE"}]}`:                                     "at /cases/0/verdict: ",
		`{"schema_version": 2, "cell_id": "ac432f5e3d61", "cases": []}`:                                                                        "at /schema_version: version 2 is not supported (expected 1)",
		`{"schema_version": 1, "cases": []}`:                                                                                                   "at /: required property 'cell_id' is missing",
		`{"schema_version": 1, "cell_id": "ac432f5e3d61", "cases": [{"id": "TC-01", "verdict": "PASS", "metrics": {"x": {"value": "fast"}}}]}`: "at /cases/0/metrics/x/value: ",
		`{"schema_version": 1, "cell_id": "ac432f5e3d61", "cases": [], "evidence": ["../../etc/passwd"]}`:                                      "at /evidence/0: ",
		`{"schema_version": 1, "cell_id": "ac432f5e3d61", "cases": [`:                                                                          "not JSON: ",
	}
	for in, want := range tests {
		_, err := ParseResult([]byte(in))
		if err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("%s:\n got %v\nwant prefix %q", in, err, want)
		}
	}
	r, err := ParseResult([]byte(`{"schema_version": 1, "cell_id": "ac432f5e3d61", "cases": [{"id": "TC-01", "verdict": "PASS", "metrics": {"ttft_ms": {"value": 12.5, "unit": "ms", "direction": "lower"}}}]}`))
	if err != nil || get(r.Cases[0].Metrics, "ttft_ms").Value != 12.5 {
		t.Fatalf("valid result: %+v %v", r, err)
	}
}

// get is ms.Get without the ok: the zero Metric when there is none.
func get(ms Metrics, name string) Metric {
	m, _ := ms.Get(name)
	return m
}

// Every problem of a file is found, in the order of the document; the
// first is ParseResult's error, whatever the pointers' order ("/cases"
// sorts before "/cell_id", yet the cell id comes first in this file).
func TestProblemsInDocumentOrder(t *testing.T) {
	b := []byte("{\"schema_version\": 1, \"cell_id\": \"cell-one\",\n \"cases\": [{\"id\": \"TC-01\", \"verdict\": \"MAYBE\"},\n  {\"id\": \"TC-02\", \"verdict\": \"PASS\", \"metrics\": {\"x\": {\"value\": \"fast\"}}}]}")
	var got []string
	for _, err := range Problems(b) {
		l, c := Position(b, err)
		got = append(got, fmt.Sprintf("%d:%d: %v", l, c, err))
	}
	want := []string{"1:34: at /cell_id: ", "2:39: at /cases/0/verdict: ", "3:65: at /cases/1/metrics/x/value: "}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: %q, want prefix %q", i, got[i], want[i])
		}
	}
	if _, err := ParseResult(b); err == nil || !strings.HasPrefix(err.Error(), "at /cell_id: ") {
		t.Errorf("ParseResult: %v, want the cell id's problem first", err)
	}
	if Problems([]byte(`{"schema_version": 1, "cell_id": "ac432f5e3d61", "cases": []}`)) != nil {
		t.Error("a valid file has problems")
	}
}
