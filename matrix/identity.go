package matrix

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"

	safe "github.com/kvsweep/kvsweep/internal/names"
)

func describe(params map[string]string) string {
	keys := slices.Sorted(maps.Keys(params))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + params[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// canonical is the identity text of a cell: JSON with sorted keys.
func canonical(params map[string]string, cases []string) string {
	b, _ := json.Marshal(struct {
		Params map[string]string `json:"params"`
		Cases  []string          `json:"cases"`
	}{params, cases})
	return string(b)
}

// CellID is the stable identity of a cell with these parameters and cases.
func CellID(params map[string]string, cases []string) string {
	sorted := append([]string(nil), cases...)
	sort.Strings(sorted)
	sum := sha256.Sum256([]byte(canonical(params, sorted)))
	return hex.EncodeToString(sum[:6])
}

// cellName is engine-topology-geometry, then the case when cases run
// separately, then any other parameters as key-value, all lower case.
func cellName(s *Spec, params map[string]string, cases []string) string {
	parts := []string{params[AxisEngine], params[AxisTopology], params[AxisGeometry]}
	if s.CaseGrouping == GroupSeparate && len(cases) == 1 {
		parts = append(parts, cases[0])
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch k {
		case AxisEngine, AxisTopology, AxisGeometry:
			continue
		}
		parts = append(parts, k+"-"+params[k])
	}
	return safe.Sanitize(strings.Join(parts, "-"))
}
