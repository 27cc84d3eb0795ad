package jsonscan

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Member is one member of a record's JSON object: its name as
// encoding/json spells it, how the record's hand-written reader reads it,
// and how its writer writes it. One list of them per record is all the
// fast codec knows of the record, so a field cannot be read and not
// written, or the other way round; CheckMembers holds the list to the
// struct's fields, which encoding/json (the reference) walks.
type Member[T any] struct {
	Name string
	// Read reads the member's value at s into v.
	Read func(s *Scanner, v *T, depth int) bool
	// Append appends ,"Name":VALUE for v, or nothing where encoding/json
	// omits the member (omitempty); ok is false for a value it cannot
	// write as encoding/json would. Nil for a record read only.
	Append func(b []byte, v *T) ([]byte, bool)
}

// M is a Member: its name, reader and writer.
func M[T any](name string, read func(s *Scanner, v *T, depth int) bool, appendTo func(b []byte, v *T) ([]byte, bool)) Member[T] {
	return Member[T]{Name: name, Read: read, Append: appendTo}
}

// Members are a record's members in the struct's field order.
type Members[T any] []Member[T]

// Read reads an object of these members into v. A member not in the list
// gives up (ok false), for encoding/json to decide. Members written by
// Append come in list order, so each is looked for after the last first.
func (ms Members[T]) Read(s *Scanner, v *T, depth int) bool {
	next := 0
	return s.Fields(depth, func(key string, depth int) bool {
		i := ms.find(key, next)
		if i < 0 {
			return false
		}
		next = i + 1
		return ms[i].Read(s, v, depth)
	})
}

// Names are the members' names, in order.
func (ms Members[T]) Names() []string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return names
}

func (ms Members[T]) find(key string, from int) int {
	for i := from; i < len(ms); i++ {
		if ms[i].Name == key {
			return i
		}
	}
	for i := 0; i < min(from, len(ms)); i++ {
		if ms[i].Name == key {
			return i
		}
	}
	return -1
}

// Append appends v as encoding/json's Marshal writes it: the members in
// list order. ok is false (and b as it was) where a member cannot be
// written so.
func (ms Members[T]) Append(b []byte, v *T) ([]byte, bool) {
	start := len(b)
	for i := range ms {
		var ok bool
		if b, ok = ms[i].Append(b, v); !ok {
			return b[:start], false
		}
	}
	if len(b) == start {
		return append(b, "{}"...), true
	}
	b[start] = '{' // the first member's comma
	return append(b, '}'), true
}

// Key appends ,"name": for a member's writer.
func Key(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// CheckMembers says how the member list (names) differs from the JSON
// members of struct type t, in order: nil when they are the same.
func CheckMembers(t reflect.Type, names []string) error {
	var want []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		want = append(want, cmp.Or(name, f.Name))
	}
	if !slices.Equal(names, want) {
		return fmt.Errorf("%s's JSON members are %v, its codec's member list %v: a field needs its entry, in field order", t, want, names)
	}
	return nil
}
