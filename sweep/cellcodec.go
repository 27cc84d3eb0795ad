package sweep

import (
	"encoding/json"

	"github.com/kvsweep/kvsweep/internal/jsonscan"
)

// cellDecoder decodes one cell of manifest.json as json.Unmarshal would,
// with its own interner (the engines, topologies, parameter names and
// command words repeat in every cell): one per goroutine. It reuses its
// scanner from cell to cell (a member list's readers are calls through
// function values, which would move a scanner per cell to the heap).
func cellDecoder() func([]byte, *Cell) error {
	in := &jsonscan.Interner{}
	s := new(jsonscan.Scanner)
	return func(b []byte, c *Cell) error {
		*c = Cell{}
		*s = jsonscan.New(b, in)
		if cellMembers.Read(s, c, 0) && s.Done() {
			return nil
		}
		*c = Cell{}
		return json.Unmarshal(b, c)
	}
}

// cellMembers are Cell's members, in field order: the one list its reader
// walks (TestCellMembers holds it to the struct; encoding/json writes
// manifest.json).
var cellMembers = jsonscan.Members[Cell]{
	jsonscan.M("id", func(s *jsonscan.Scanner, c *Cell, _ int) (ok bool) { c.ID, ok = s.Str(); return }, nil),
	jsonscan.M("name", func(s *jsonscan.Scanner, c *Cell, _ int) (ok bool) { c.Name, ok = s.Str(); return }, nil),
	jsonscan.M("params", func(s *jsonscan.Scanner, c *Cell, depth int) (ok bool) { c.Params, ok = s.StrMap(depth); return }, nil),
	jsonscan.M("cases", func(s *jsonscan.Scanner, c *Cell, depth int) (ok bool) { c.Cases, ok = s.StrList(depth); return }, nil),
	jsonscan.M("engine", func(s *jsonscan.Scanner, c *Cell, _ int) (ok bool) { c.Engine, ok = s.Str(); return }, nil),
	jsonscan.M("topology", func(s *jsonscan.Scanner, c *Cell, _ int) (ok bool) { c.Topology, ok = s.Str(); return }, nil),
	jsonscan.M("geometry", func(s *jsonscan.Scanner, c *Cell, _ int) (ok bool) { c.Geometry, ok = s.Str(); return }, nil),
	jsonscan.M("kind", func(s *jsonscan.Scanner, c *Cell, _ int) (ok bool) { c.Kind, ok = s.Str(); return }, nil),
	jsonscan.M("job", func(s *jsonscan.Scanner, c *Cell, _ int) (ok bool) { c.Job, ok = s.Str(); return }, nil),
	jsonscan.M("index", func(s *jsonscan.Scanner, c *Cell, _ int) (ok bool) { c.Index, ok = s.Integer(); return }, nil),
	jsonscan.M("dir", func(s *jsonscan.Scanner, c *Cell, _ int) (ok bool) { c.Dir, ok = s.Str(); return }, nil),
	jsonscan.M("argv", func(s *jsonscan.Scanner, c *Cell, depth int) (ok bool) { c.Argv, ok = s.StrList(depth); return }, nil),
}

// decodeCell is json.Unmarshal of a Cell for the cells render writes:
// every member a known one, spelled as written, of its own type, once.
// Anything else gives up (ok false) for encoding/json to decide
// (FuzzDecodeCell holds the two to the same Cell).
func decodeCell(b []byte, in *jsonscan.Interner) (c Cell, ok bool) {
	s := jsonscan.New(b, in)
	ok = cellMembers.Read(&s, &c, 0)
	return c, ok && s.Done()
}
