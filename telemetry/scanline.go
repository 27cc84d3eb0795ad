package telemetry

import (
	"math"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// scanLine reads a line as the scraper writes it without reflection,
// adding its series; false when it meets anything else (an older line's
// "values", a key it does not write, a key twice, a value of another
// type), and then nothing was added and encoding/json reads the line.
func (l *loaded) scanLine(b []byte) bool {
	type pending struct {
		family string
		raw    []byte
		v      float64
	}
	var (
		s   Sample
		ps  []pending
		buf [32]pending
	)
	ps = buf[:0]
	sc := jsonscan.New(b, &l.in)
	ok := sc.Fields(0, func(key string, depth int) bool {
		var ok bool
		switch key {
		case "t":
			var f float64
			f, ok = sc.Num()
			s.T = int64(f)
			return ok && f == math.Trunc(f) && math.Abs(f) < 1<<53
		case "url":
			s.URL, ok = sc.Str()
			return ok
		case "role":
			s.Role, ok = sc.Str()
			return ok
		case "name":
			s.Name, ok = sc.Str()
			return ok
		case "error":
			s.Error, ok = sc.Str()
			return ok
		case "series":
			return sc.Elements(depth, func(depth int) bool {
				var p pending
				ok := sc.Fields(depth, func(key string, depth int) bool {
					switch key {
					case "f":
						var ok bool
						p.family, ok = sc.Str()
						return ok
					case "l":
						from := sc.Pos()
						ok := sc.SkipValue()
						p.raw = sc.Bytes(from, sc.Pos())
						return ok
					case "v":
						var ok bool
						p.v, ok = sc.Num()
						return ok
					}
					return false
				})
				ps = append(ps, p)
				return ok
			})
		}
		return false // "values" (an older line), or a key the scraper never writes
	})
	if !ok || !sc.Done() {
		return false
	}
	infos := make([]*labelInfo, len(ps))
	for i, p := range ps {
		if infos[i] = l.rawInfo(p.raw); infos[i] == nil {
			return false
		}
	}
	if l.sample(s.URL, s.Error) {
		for i, p := range ps {
			l.add(s, p.family, infos[i], p.v)
		}
		l.prev[s.URL] = s.T
	}
	return true
}

// rawInfo is the labelInfo of a labels object's text (none: no labels);
// nil when it is not an object of strings.
func (l *loaded) rawInfo(raw []byte) *labelInfo {
	if li, ok := l.raw[string(raw)]; ok {
		return li
	}
	var labels map[string]string
	if len(raw) > 0 {
		sc := jsonscan.New(raw, nil)
		if !sc.Members(1, func(key string, _ int) bool {
			v, ok := sc.Str()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[key] = v
			return ok
		}) || !sc.Done() {
			return nil
		}
		if raw := string(raw); raw != "null" && labels == nil {
			labels = map[string]string{}
		}
	}
	li := l.infoOf(labels)
	if len(l.raw) < maxLabelSets {
		l.raw[string(raw)] = li
	}
	return li
}
