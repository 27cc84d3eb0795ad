package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A crash can tear the last record at any byte. Whatever byte it stopped
// at, the next append starts on a line of its own, every whole record is
// still read, and the torn bytes are kept beside the journal.
func TestTornTailAtEveryByte(t *testing.T) {
	whole := Record{Type: RecIntent, Time: time.Date(2026, 12, 3, 1, 2, 3, 0, time.UTC), Seq: 1, Job: "aggregated", Indices: "0-3", JobName: "kvs.x.aggregated.s1"}
	b, err := json.Marshal(whole)
	if err != nil {
		t.Fatal(err)
	}
	line := append(b, '\n')
	next := Record{Type: RecSubmitted, Seq: 2, JobID: "42"}
	for k := 1; k < len(line); k++ {
		dir := t.TempDir()
		torn := append(append([]byte{}, line...), line[:k]...) // one whole record, then k bytes of the next
		if err := os.WriteFile(filepath.Join(dir, JournalFile), torn, 0o644); err != nil {
			t.Fatal(err)
		}
		j, err := OpenJournal(dir)
		if err != nil {
			t.Fatalf("byte %d: %v", k, err)
		}
		if err := j.Append(next); err != nil {
			t.Fatal(err)
		}
		j.Close()
		recs, err := ReadJournal(dir)
		if err != nil {
			t.Fatalf("torn at byte %d: the journal no longer reads: %v", k, err)
		}
		complete := k == len(line)-1 // the whole record, only its line break lost
		want := 2
		if complete {
			want = 3
		}
		if len(recs) != want || recs[0].Seq != 1 || recs[len(recs)-1].JobID != "42" {
			t.Fatalf("torn at byte %d: read %d records %+v, want %d", k, len(recs), recs, want)
		}
		sides, _ := filepath.Glob(filepath.Join(dir, JournalFile+".torn-*"))
		if complete != (len(sides) == 0) {
			t.Errorf("torn at byte %d: %d side files", k, len(sides))
		}
		if !complete {
			got, _ := os.ReadFile(sides[0])
			if string(got) != string(line[:k]) {
				t.Errorf("torn at byte %d: kept %q, want %q", k, got, line[:k])
			}
		}
	}
}
