package testrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
	"github.com/kvsweep/kvsweep/internal/testing/fill"
	"github.com/kvsweep/kvsweep/result"
)

// runFileSamples are runs as collect makes them, and the corners of the
// encoding: no cell, one cell, notes, text that JSON escapes.
func runFileSamples(t testing.TB) []*Run {
	var runs []*Run
	for _, dir := range []string{"testdata/base", "testdata/cand", "testdata/mixed"} {
		r, err := Collect(dir, CollectOptions{Now: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	odd := *runs[0]
	odd.Cells = append([]CellResult(nil), odd.Cells[:1]...)
	odd.Cells[0].Detail = "<b>&\"\u2028\\ é \x7f"
	odd.Notes = []Note{{Cell: "c", Text: "a <note>", Author: "me", Time: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)}}
	empty := *runs[0]
	empty.Cells = nil
	none := *runs[0]
	none.Cells = []CellResult{}
	many := *runs[2]
	many.Cells = nil
	for i := 0; len(many.Cells) < 5*cellsPerPart+7; i++ { // several rounds of parts
		c := runs[2].Cells[i%len(runs[2].Cells)]
		c.Name = fmt.Sprintf("%s-%d", c.Name, i)
		many.Cells = append(many.Cells, c)
	}
	return append(runs, &odd, &empty, &none, &many)
}

// results.json is exactly json.Marshal's bytes of the run, and reads back
// as json.Unmarshal reads it, whatever the number of CPUs.
func TestRunFileBytes(t *testing.T) {
	for _, r := range runFileSamples(t) {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		var got bytes.Buffer
		if err := encodeRun(&got, r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("run %s (%d cells): encodeRun differs from json.Marshal:\n%.300s\n%.300s", r.ID, len(r.Cells), got.Bytes(), want)
		}
		var ref Run
		if err := json.Unmarshal(want, &ref); err != nil {
			t.Fatal(err)
		}
		if _, ok := decodeRunParallel(want); !ok {
			t.Fatalf("run %s: the parallel decoder gave up on results.json as WriteRun writes it", r.ID)
		}
		back, err := decodeRun(want)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*back, ref) {
			t.Fatalf("run %s: decodeRun differs from json.Unmarshal", r.ID)
		}
	}
}

// FuzzDecodeRun holds decodeRun to json.Unmarshal: the same run, or an
// error where it has one.
func FuzzDecodeRun(f *testing.F) {
	for _, r := range runFileSamples(f) {
		b, _ := json.Marshal(r)
		f.Add(b)
		f.Add(bytes.Replace(b, []byte(`"cells":[`), []byte(`"cells":[1,`), 1))
		f.Add(bytes.Replace(b, []byte(`"outcome"`), []byte(`"Outcome"`), 1))
		f.Add(b[:len(b)/2])
	}
	for _, s := range []string{`{}`, `{"cells":[]}`, `{"cells":null}`, `{"cells":[{}],"cells":[]}`, `{"cells":[{"cell_id":"a\"]"}]}`,
		`{"cells":[{} {}]}`, `{"cells":[,]}`, `{"id":1,"cells":[]}`, `{"cells":[]} x`, `{"cells":[{"params":{"a":"b"}}], "spec": {"k": "v"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ref Run
		refErr := json.Unmarshal(b, &ref)
		got, err := decodeRun(b)
		if (err != nil) != (refErr != nil) {
			t.Fatalf("%q: decodeRun error %v, json.Unmarshal error %v", b, err, refErr)
		}
		if err != nil {
			if err.Error() != refErr.Error() {
				t.Fatalf("%q: decodeRun says %q, json.Unmarshal %q", b, err, refErr)
			}
			return
		}
		if !reflect.DeepEqual(*got, ref) {
			t.Fatalf("%q: decodeRun %+v, json.Unmarshal %+v", b, got, ref)
		}
	})
}

// Every cell WriteRun writes decodes on decodeCell's path, as
// json.Unmarshal decodes it.
func TestDecodeCellTakesTheCells(t *testing.T) {
	for _, r := range runFileSamples(t) {
		for _, c := range r.Cells {
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := decodeCell(b, &result.Scratch{})
			if !ok {
				t.Fatalf("decodeCell gave up on %s", b)
			}
			var want CellResult
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s:\ndecodeCell   %+v\njson.Unmarshal %+v", b, got, want)
			}
		}
	}
}

// FuzzDecodeCell holds decodeCell to json.Unmarshal: whenever it decodes
// a cell, json.Unmarshal decodes the same.
func FuzzDecodeCell(f *testing.F) {
	addSampleCells(f)
	for _, s := range []string{
		`{"cell_id":"a","exit_code":1e2}`, `{"cell_id":"a","exit_code":-0}`, `{"cell_id":"a","exit_code":null}`,
		`{"Cell_ID":"a"}`, `{"cell_id":"a","cell_id":"b"}`, `{"params":{}}`, `{"params":{"a":"b","a":"c"}}`,
		`{"planned_cases":[]}`, `{"cases":[{"metrics":{}}]}`, `{"cases":[{"metrics":{"m":{"value":1,"unit":"s","other":1}}}]}`,
		`{"image":{"source_revisions":{"schema_version":1,"components":{"a":{"commit":"c"}}}}}`,
		`{"image":{"source_revisions":{"a":1,"a":2}}}`, `{"image":{"source_revisions":null}}`,
		`{"verdicts_only":true,"attempts":2,"earlier":[{"state":"FAILED","class":"infra"}]}`, `{"attempts":1.5}`,
		`{"detail":"\u003cb\u003e \ud800 \"x\""}`, "{\"detail\":\"\xff\"}", `{"cases":[null]}`, `{} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := decodeCell(b, &result.Scratch{})
		if !ok {
			return // encoding/json decides
		}
		var want CellResult
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("decodeCell took %q, json.Unmarshal refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\ndecodeCell     %+v\njson.Unmarshal %+v", b, got, want)
		}
	})
}

// appendCell writes every sample cell as json.Marshal does.
func TestAppendCellAsMarshal(t *testing.T) {
	for _, r := range runFileSamples(t) {
		for i := range r.Cells {
			want, err := json.Marshal(&r.Cells[i])
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendCell(nil, &r.Cells[i])
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("appendCell (%v):\n%s\njson.Marshal:\n%s", err, got, want)
			}
		}
	}
}

// FuzzAppendCell holds appendCell to json.Marshal on cells made from
// fuzzed JSON: the same bytes, or an error where it has one.
func FuzzAppendCell(f *testing.F) {
	addSampleCells(f)
	for _, s := range []string{
		`{"detail":"<a href=\"x\">&amp;</a> \u2028 \u00e9 \t\n\b\f\u0001 \ud800"}`, `{"params":{"b":"2","a":"1","<":">"}}`,
		`{"cases":[{"id":"a","duration_s":1e-7,"metrics":{"z":{"value":1e21},"a":{"value":-0.000001,"unit":"s"},"m":{"value":123456789012345678901234}}}]}`,
		`{"cases":[{"duration_s":0.1},{"duration_s":1e20},{"duration_s":-1e-300}]}`, `{"exit_code":0,"attempts":-3,"verdicts_only":true}`,
		`{"earlier":[{"state":"","class":""}],"evidence":[""],"planned_cases":[]}`, "{\"name\":\"\xff\xfe\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var c CellResult
		if json.Unmarshal(in, &c) != nil {
			return
		}
		want, werr := json.Marshal(&c)
		got, err := appendCell(nil, &c)
		if (err != nil) != (werr != nil) || (err == nil && !bytes.Equal(got, want)) {
			t.Fatalf("%q:\nappendCell   %s (%v)\njson.Marshal %s (%v)", in, got, err, want, werr)
		}
	})
}

// A CellResult with every field set, down to every nested one, encodes
// as json.Marshal encodes it and decodes on decodeCell's path: a field
// added to the results without the codec fails here.
func TestCellCodecCoversEveryField(t *testing.T) {
	var c CellResult
	fill.Value(reflect.ValueOf(&c).Elem())
	want, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendCell(nil, &c)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("appendCell (%v):\n%s\njson.Marshal:\n%s", err, got, want)
	}
	back, ok := decodeCell(want, &result.Scratch{})
	if !ok {
		t.Fatalf("decodeCell gave up on %s", want)
	}
	if !reflect.DeepEqual(back, c) {
		t.Fatalf("decodeCell:\n%+v\nwant\n%+v", back, c)
	}
}

// addSampleCells seeds a fuzzer with cells of the sample runs as
// json.Marshal writes them.
func addSampleCells(f *testing.F) {
	for _, r := range runFileSamples(f) {
		for _, c := range r.Cells[:min(len(r.Cells), 12)] {
			b, _ := json.Marshal(c)
			f.Add(b)
		}
	}
}

// The codec's member lists are the structs' JSON members, in order: a
// field added to CellResult, its image or an attempt without its entry
// fails here, before any fuzzer runs.
func TestCellMembers(t *testing.T) {
	for _, tc := range []struct {
		typ   reflect.Type
		names []string
	}{
		{reflect.TypeFor[CellResult](), cellMembers.Names()},
		{reflect.TypeFor[result.Image](), imageMembers.Names()},
		{reflect.TypeFor[Attempt](), attemptMembers.Names()},
	} {
		if err := jsonscan.CheckMembers(tc.typ, tc.names); err != nil {
			t.Error(err)
		}
	}
}
