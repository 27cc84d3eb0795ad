package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxJSONDepth bounds the nesting of a result.json; the schema needs five.
const maxJSONDepth = 64

// decodeJSON reads one JSON document into the generic tree the schema
// validator takes (objects, arrays, strings, json.Number, bools, nil),
// refusing what encoding/json would let through silently: a key that
// occurs twice in one object (the last would win), a number beyond a
// 64-bit float (it would become infinity and break every later step),
// nesting past maxJSONDepth, and data after the document. Errors carry
// the JSON pointer of the place.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not JSON: data after the document")
	}
	return v, nil
}

// token is the next token; the document ending here is an error.
func token(dec *json.Decoder) (json.Token, error) {
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	return tok, nil
}

func decodeValue(dec *json.Decoder, ptr string, depth int) (any, error) {
	tok, err := token(dec)
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth {
			return nil, fmt.Errorf("at %s: nested more than %d deep", pointer(ptr), maxJSONDepth)
		}
		if t == '{' {
			return decodeObject(dec, ptr, depth+1)
		}
		return decodeArray(dec, ptr, depth+1)
	case json.Number:
		if _, err := strconv.ParseFloat(t.String(), 64); err != nil {
			return nil, fmt.Errorf("at %s: %s is out of the range of a 64-bit number", pointer(ptr), t)
		}
		return t, nil
	}
	return tok, nil
}

func decodeObject(dec *json.Decoder, ptr string, depth int) (any, error) {
	m := map[string]any{}
	for dec.More() {
		tok, err := token(dec)
		if err != nil {
			return nil, err
		}
		k := tok.(string)
		kp := ptr + "/" + escapePointer(k)
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("at %s: key %q occurs twice in one object", pointer(ptr), k)
		}
		if m[k], err = decodeValue(dec, kp, depth); err != nil {
			return nil, err
		}
	}
	if _, err := token(dec); err != nil { // '}'
		return nil, err
	}
	return m, nil
}

func decodeArray(dec *json.Decoder, ptr string, depth int) (any, error) {
	a := []any{}
	for i := 0; dec.More(); i++ {
		v, err := decodeValue(dec, ptr+"/"+strconv.Itoa(i), depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	if _, err := token(dec); err != nil { // ']'
		return nil, err
	}
	return a, nil
}

func pointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
