package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
)

// MaxFaultsLog bounds the HealthFaultsLog read for the nodes in it.
const MaxFaultsLog = 4 << 20

// GPUFault reports whether the cell's last attempt left HealthFaultFile:
// its GPUs failed under it, outside the test.
func GPUFault(dir, cellID string) bool {
	return IsFile(dir, CellsDir+"/"+cellID+"/"+HealthFaultFile)
}

// GPUFaultNodes is the nodes the cell's attempts had GPU faults on (the
// "node" of each line of HealthFaultsLog), sorted, once each.
func GPUFaultNodes(dir, cellID string) []string {
	b, err := ReadFile(dir, CellsDir+"/"+cellID+"/"+HealthFaultsLog, MaxFaultsLog)
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, MaxFaultsLog)
	for sc.Scan() {
		var line struct {
			Node string `json:"node"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Node != "" && !slices.Contains(out, line.Node) {
			out = append(out, line.Node)
		}
	}
	slices.Sort(out)
	return out
}
