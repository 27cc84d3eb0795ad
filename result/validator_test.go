package result

import (
	"bytes"
	"os"
	"sync"
	"testing"

	santhosh "github.com/santhosh-tekuri/jsonschema/v6"
)

// santhoshSchema is the result schema compiled by a second JSON Schema
// implementation, santhosh-tekuri/jsonschema (kvsweep's validator before
// this one: it compiles five drafts' meta-schemas at package start, 4 ms
// on every command, so it is a test dependency only).
var santhoshSchema = sync.OnceValues(func() (*santhosh.Schema, error) {
	doc, err := santhosh.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	c := santhosh.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("result.v1.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("result.v1.json")
})

// FuzzValidatorsAgree holds the validator kvsweep uses to a second
// implementation of the same draft: every document both read as JSON is
// valid for both or for neither.
func FuzzValidatorsAgree(f *testing.F) {
	for _, b := range fastResultSeeds(f) {
		f.Add(b)
	}
	other, err := santhoshSchema()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := decodeJSON(b)
		if err != nil {
			return
		}
		ours := validateTree(doc)
		theirs := other.Validate(doc)
		if (ours == nil) != (theirs == nil) {
			t.Fatalf("%q: kvsweep's validator says %v, santhosh-tekuri says %v", b, ours, theirs)
		}
	})
}

// BenchmarkValidators validates one sample result against the schema with
// each implementation (the path a refused or unusual file takes).
func BenchmarkValidators(b *testing.B) {
	raw, err := os.ReadFile("../examples/results/phase1.json")
	if err != nil {
		b.Fatal(err)
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("kaptinlin", func(b *testing.B) {
		for b.Loop() {
			if err := validateTree(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("santhosh-tekuri", func(b *testing.B) {
		other, err := santhoshSchema()
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := other.Validate(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
