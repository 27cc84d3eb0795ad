package sweep

import (
	"encoding/json"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// cellDecoder decodes one cell of manifest.json as json.Unmarshal would,
// with its own interner (the engines, topologies, parameter names and
// command words repeat in every cell): one per goroutine.
func cellDecoder() func([]byte, *Cell) error {
	in := &jsonscan.Interner{}
	return func(b []byte, c *Cell) error {
		if cell, ok := decodeCell(b, in); ok {
			*c = cell
			return nil
		}
		return json.Unmarshal(b, c)
	}
}

// decodeCell is json.Unmarshal of a Cell for the cells render writes:
// every member a known one, spelled as written, of its own type, once.
// Anything else gives up (ok false) for encoding/json to decide
// (FuzzDecodeCell holds the two to the same Cell).
func decodeCell(b []byte, in *jsonscan.Interner) (c Cell, ok bool) {
	s := jsonscan.New(b, in)
	ok = s.Fields(0, func(key string, depth int) bool {
		var ok bool
		switch key {
		case "id":
			c.ID, ok = s.Str()
		case "name":
			c.Name, ok = s.Str()
		case "params":
			c.Params, ok = s.StrMap(depth)
		case "cases":
			c.Cases, ok = s.StrList(depth)
		case "engine":
			c.Engine, ok = s.Str()
		case "topology":
			c.Topology, ok = s.Str()
		case "geometry":
			c.Geometry, ok = s.Str()
		case "kind":
			c.Kind, ok = s.Str()
		case "job":
			c.Job, ok = s.Str()
		case "index":
			c.Index, ok = s.Integer()
		case "dir":
			c.Dir, ok = s.Str()
		case "argv":
			c.Argv, ok = s.StrList(depth)
		}
		return ok
	})
	return c, ok && s.Done()
}
