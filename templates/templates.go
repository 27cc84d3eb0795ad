// Package templates holds the text/template files kvsweep renders: the
// Slurm job script (templates/sbatch/*.tmpl) and, for image builds, the
// quick-start Dockerfiles (one an engine: vLLM's, SGLang's) and the KVCR
// layer's.
//
// The job script is "job.sbatch.tmpl". It calls named templates that a site
// can replace one by one: "launch/RUNTIME" defines the shell function that
// starts a command in the container (pyxis, enroot, apptainer, docker, none),
// and "body/KIND" starts the topology (aggregated, sidecar, disagg-2p1d,
// two-node). Files in an override directory are parsed after the embedded
// ones, so a {{define}} there replaces the embedded definition of that name.
package templates

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"text/template"
)

//go:embed sbatch/*.tmpl
var FS embed.FS

//go:embed Dockerfile.quick-start-vllm
var quickStart []byte

// QuickStartDockerfile is the embedded quick-start Dockerfile of the vLLM
// engine, the default of kvsweep image build.
func QuickStartDockerfile() []byte { return quickStart }

//go:embed Dockerfile.quick-start-sglang
var quickStartSGLang []byte

// QuickStartSGLangDockerfile is the embedded quick-start Dockerfile of the
// SGLang engine (pins with engine: sglang): SGLang's image with Dynamo and
// KVCR, no vLLM adapter.
func QuickStartSGLangDockerfile() []byte { return quickStartSGLang }

//go:embed Dockerfile.kvcr-layer
var kvcrLayer []byte

// KVCRLayerDockerfile is the embedded Dockerfile of kvsweep image layer:
// a KVCR checkout installed over a quick-start image.
func KVCRLayerDockerfile() []byte { return kvcrLayer }

// JobTemplate is the name of the job script template.
const JobTemplate = "job.sbatch.tmpl"

// Load parses the embedded job templates, then every *.tmpl file of
// overrideDir (if not empty). Executing a template with a field or key it
// does not know is an error, never an empty string.
func Load(overrideDir string, funcs template.FuncMap) (*template.Template, error) {
	t := template.New(JobTemplate).Funcs(funcs).Option("missingkey=error")
	t, err := t.ParseFS(FS, "sbatch/*.tmpl")
	if err != nil {
		return nil, err
	}
	if overrideDir == "" {
		return t, nil
	}
	files, err := filepath.Glob(filepath.Join(overrideDir, "*.tmpl"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if _, err := os.Stat(overrideDir); err != nil {
			return nil, fmt.Errorf("templates: %w", err)
		}
		return nil, fmt.Errorf("templates: %s has no *.tmpl files", overrideDir)
	}
	return t.ParseFiles(files...)
}
