package jsonscan

// The appenders below write values as encoding/json's Marshal writes them,
// for the hand-written encoders beside the readers (results.json's cells).

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
)

// AppendOptStr appends ,"name":"v" unless v is empty (omitempty).
func AppendOptStr(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(append(append(b, ',', '"'), name...), '"', ':')
	return AppendStr(b, v)
}

// AppendStrList appends vs as a JSON array of strings (null for nil).
func AppendStrList(b []byte, vs []string) []byte {
	if vs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendStr(b, v)
	}
	return append(b, ']')
}

// AppendStrMap appends m as a JSON object, its keys sorted (null for nil).
func AppendStrMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendStr(b, k)
		b = append(b, ':')
		b = AppendStr(b, m[k])
	}
	return append(b, '}')
}

// AppendStr appends s as encoding/json writes a string: printable ASCII
// other than " \ < > & as it is, anything else through json.Marshal.
func AppendStr(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // a string always encodes
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendFloat appends f as encoding/json writes a float64; ok is false
// for NaN and the infinities, which it refuses.
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 is written 1e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
