package hardware

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func smi(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const env = "node=gpu017\nkernel=6.1.0-28-amd64\ncpu=Intel(R) Xeon(R)   Platinum 8480+\ncpus=224\ngpus_visible=%s\n"

// The job's GPUs only: a local executor's task sees the node's, and its
// CUDA_VISIBLE_DEVICES (indices or UUIDs) says which are its own.
func TestRead(t *testing.T) {
	f := Read([]byte(strings.Replace(env, "%s", "1", 1)), smi(t, "two-gpus.xml"), []byte("2.27.3\n"))
	want := &Fingerprint{Node: "gpu017", Kernel: "6.1.0-28-amd64", CPU: "Intel(R) Xeon(R) Platinum 8480+", CPUs: 224,
		GPUs:   []GPU{{Model: "NVIDIA H100 80GB HBM3", UUID: "GPU-66666666-7777-8888-9999-000000000000", MemoryMiB: 81559, Index: 1}},
		Driver: "570.124.06", CUDA: "12.8", NCCL: "2.27.3"}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got  %+v\nwant %+v", f, want)
	}
	if s := f.Summary(); s != "NVIDIA H100 80GB HBM3, driver 570.124.06, CUDA 12.8, NCCL 2.27.3" {
		t.Errorf("summary %q", s)
	}
	// No CUDA_VISIBLE_DEVICES at all: the node's GPUs are the job's.
	all := Read([]byte(strings.Replace(env, "gpus_visible=%s\n", "", 1)), smi(t, "two-gpus.xml"), nil)
	if len(all.GPUs) != 2 || all.GPUModels() != "2x NVIDIA H100 80GB HBM3" {
		t.Errorf("no CUDA_VISIBLE_DEVICES: %+v", all.GPUs)
	}
	// A task of the local executor without GPUs: CUDA_VISIBLE_DEVICES set
	// and empty. (Seen on a real H100 host: its no-GPU cells first showed
	// the node's GPU.)
	none := Read([]byte("node=gpu017\ngpus_visible=\n"), smi(t, "two-gpus.xml"), nil)
	if len(none.GPUs) != 0 || none.Summary() != "the job has no GPU; driver 570.124.06, CUDA 12.8" {
		t.Errorf("no GPU: %+v %q", none.GPUs, none.Summary())
	}
	byUUID := Read([]byte(strings.Replace(env, "%s", "GPU-11111111-2222-3333-4444-555555555555", 1)), smi(t, "two-gpus.xml"), nil)
	if len(byUUID.GPUs) != 1 || byUUID.GPUs[0].Index != 0 {
		t.Errorf("by UUID: %+v", byUUID.GPUs)
	}
}

// A node without nvidia-smi, output that does not parse, or no file at
// all: said, never a failure.
func TestReadWithout(t *testing.T) {
	if f := Read(nil, nil, nil); f != nil {
		t.Errorf("nothing recorded: %+v", f)
	}
	if f := Read([]byte("node=cpu01\n"), nil, nil); f.Note != "no nvidia-smi on the node" || f.Summary() != "no nvidia-smi on the node" {
		t.Errorf("no nvidia-smi: %+v", f)
	}
	if f := Read([]byte("node=n\n"), []byte("<nvidia_smi_log><gpu>"), nil); !strings.HasPrefix(f.Note, "nvidia-smi -q -x did not parse") {
		t.Errorf("broken xml: %+v", f)
	}
	if f := Read([]byte("gpus_visible=7\n"), smi(t, "two-gpus.xml"), nil); f.Note != "no GPU of the job's on the node" {
		t.Errorf("GPU 7 of 2: %+v", f)
	}
}

// A hostile file: nothing of it is trusted beyond the fields read.
func FuzzRead(f *testing.F) {
	f.Add([]byte(env), []byte("<nvidia_smi_log></nvidia_smi_log>"), []byte("2.27"))
	f.Fuzz(func(t *testing.T, env, smi, nccl []byte) {
		fp := Read(env, smi, nccl)
		_ = fp.Summary()
	})
}

// nvidia-smi -q -x as a real H100 node wrote it (bench/fingerprint.sh on
// the device tool's machine, 2026-12-06; nvidia-smi itself reported
// "NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB,
// GPU-c0596527-5e7d-083e-e3b0-b4e8c5894c12" and CUDA 13.0).
func TestReadRealH100(t *testing.T) {
	f := Read([]byte("node=vm\ngpus_visible=0\n"), smi(t, "h100-nvidia-smi.xml"), nil)
	want := []GPU{{Model: "NVIDIA H100 80GB HBM3", UUID: "GPU-c0596527-5e7d-083e-e3b0-b4e8c5894c12", MemoryMiB: 81559, Index: 0}}
	if !reflect.DeepEqual(f.GPUs, want) || f.Driver != "580.159.04" || f.CUDA != "13.0" {
		t.Errorf("got %+v", f)
	}
}
