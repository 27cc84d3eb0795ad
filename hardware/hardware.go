// Package hardware is the fingerprint of what a cell ran on: GPU model,
// UUID and memory, driver and CUDA versions (from nvidia-smi -q -x on the
// node), the NCCL the image installed, CPU model, kernel and node. The
// job script records the raw facts in the cell directory before the
// harness starts (templates/sbatch/body.tmpl, "record_hardware"):
//
//	cells/ID/hardware.env    KEY=VALUE lines: node, kernel, cpu, cpus,
//	                         gpus_visible (the job's CUDA_VISIBLE_DEVICES)
//	cells/ID/nvidia-smi.xml  nvidia-smi -q -x, where nvidia-smi is
//	cells/ID/nccl-version    the NCCL wheel's version in the image
//
// and collect reads them with Read. A node without GPUs or without
// nvidia-smi records that, and nothing fails.
package hardware

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxSMISize bounds the nvidia-smi -q -x the job recorded (the files'
// names are package sweep's: HardwareEnvFile, SMIFile, NCCLVersionFile).
const MaxSMISize = 4 << 20 // nvidia-smi -q -x of an 8-GPU node is ~300 KB

// Fingerprint is what a cell ran on.
type Fingerprint struct {
	Node   string `json:"node,omitempty"`
	Kernel string `json:"kernel,omitempty"`
	CPU    string `json:"cpu,omitempty"`
	CPUs   int    `json:"cpus,omitempty"`
	GPUs   []GPU  `json:"gpus,omitempty"`
	Driver string `json:"driver,omitempty"`
	CUDA   string `json:"cuda,omitempty"`
	NCCL   string `json:"nccl,omitempty"`
	// Note says what could not be known ("no nvidia-smi on the node").
	Note string `json:"note,omitempty"`
}

// GPU is one of the cell's GPUs.
type GPU struct {
	Model     string `json:"model"`
	UUID      string `json:"uuid,omitempty"`
	MemoryMiB int    `json:"memory_mib,omitempty"`
	Index     int    `json:"index"` // nvidia-smi's minor number
}

// smiLog is the part of nvidia-smi -q -x the fingerprint reads.
type smiLog struct {
	Driver string   `xml:"driver_version"`
	CUDA   string   `xml:"cuda_version"`
	GPUs   []smiGPU `xml:"gpu"`
}

type smiGPU struct {
	Product string `xml:"product_name"`
	UUID    string `xml:"uuid"`
	Minor   string `xml:"minor_number"`
	Memory  string `xml:"fb_memory_usage>total"`
}

// Read builds the fingerprint from the job's files (nil where the job
// wrote none): env is hardware.env, smi nvidia-smi.xml, nccl
// nccl-version. A file that does not parse is said in Note, not an error:
// the fingerprint describes, it never fails a cell.
func Read(env, smi, nccl []byte) *Fingerprint {
	if env == nil && smi == nil && nccl == nil {
		return nil
	}
	f := &Fingerprint{NCCL: strings.TrimSpace(string(nccl))}
	visible, none := readEnv(env, f)
	if smi == nil {
		f.Note = "no nvidia-smi on the node"
		return f
	}
	var log smiLog
	if err := xml.Unmarshal(smi, &log); err != nil {
		f.Note = fmt.Sprintf("nvidia-smi -q -x did not parse: %v", err)
		return f
	}
	f.Driver, f.CUDA = strings.TrimSpace(log.Driver), strings.TrimSpace(log.CUDA)
	for _, g := range log.GPUs {
		gpu := GPU{Model: strings.TrimSpace(g.Product), UUID: strings.TrimSpace(g.UUID), Index: -1}
		if n, err := strconv.Atoi(strings.TrimSpace(g.Minor)); err == nil {
			gpu.Index = n
		}
		if mem, _, ok := strings.Cut(strings.TrimSpace(g.Memory), " "); ok {
			gpu.MemoryMiB, _ = strconv.Atoi(mem)
		}
		if !none && (visible == nil || visible[gpu.UUID] || visible[strconv.Itoa(gpu.Index)]) {
			f.GPUs = append(f.GPUs, gpu)
		}
	}
	switch {
	case none:
		f.Note = "the job has no GPU"
	case len(f.GPUs) == 0:
		f.Note = "no GPU of the job's on the node"
	}
	return f
}

// readEnv reads hardware.env into f and returns the job's visible GPUs
// (indices or UUIDs), nil when all of the node's are; none is true when
// the job was given no GPU (CUDA_VISIBLE_DEVICES set and empty).
func readEnv(env []byte, f *Fingerprint) (visible map[string]bool, none bool) {
	sc := bufio.NewScanner(bytes.NewReader(env))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch v = strings.TrimSpace(v); k {
		case "node":
			f.Node = v
		case "kernel":
			f.Kernel = v
		case "cpu":
			f.CPU = strings.Join(strings.Fields(v), " ")
		case "cpus":
			f.CPUs, _ = strconv.Atoi(v)
		case "gpus_visible":
			none = v == ""
			if v != "" {
				visible = map[string]bool{}
				for _, g := range strings.Split(v, ",") {
					visible[strings.TrimSpace(g)] = true
				}
			}
		}
	}
	return visible, none
}

// GPUModels is the distinct models of the fingerprint's GPUs, "2x NVIDIA
// H100 80GB HBM3", for a report's column.
func (f *Fingerprint) GPUModels() string {
	if f == nil || len(f.GPUs) == 0 {
		return ""
	}
	counts := map[string]int{}
	var order []string
	for _, g := range f.GPUs {
		if counts[g.Model] == 0 {
			order = append(order, g.Model)
		}
		counts[g.Model]++
	}
	slices.Sort(order)
	parts := make([]string, len(order))
	for i, m := range order {
		parts[i] = m
		if counts[m] > 1 {
			parts[i] = fmt.Sprintf("%dx %s", counts[m], m)
		}
	}
	return strings.Join(parts, ", ")
}

// Summary is the fingerprint in a line: GPUs, driver, CUDA, NCCL.
func (f *Fingerprint) Summary() string {
	if f == nil {
		return ""
	}
	var parts []string
	if m := f.GPUModels(); m != "" {
		parts = append(parts, m)
	}
	for _, kv := range [][2]string{{"driver", f.Driver}, {"CUDA", f.CUDA}, {"NCCL", f.NCCL}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	switch {
	case len(parts) == 0:
		return f.Note
	case len(f.GPUs) == 0 && f.Note != "":
		return f.Note + "; " + strings.Join(parts, ", ")
	}
	return strings.Join(parts, ", ")
}
