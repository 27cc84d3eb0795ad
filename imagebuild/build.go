package imagebuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/cli/cli/config"
	"github.com/moby/buildkit/client"
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/session/auth/authprovider"
	"github.com/moby/buildkit/util/progress/progressui"
	"github.com/tonistiigi/fsutil"
	"golang.org/x/sync/errgroup"

	"github.com/kvsweep/kvsweep/provenance"
)

// LockName is the name the python_lock file has in its named context.
const LockName = "requirements.lock"

// RevisionsPath is where the image records what it was built from.
const RevisionsPath = provenance.Path

// DefaultAddr is where buildkitd listens unless $BUILDKIT_HOST or an
// option says otherwise.
const DefaultAddr = "unix:///run/buildkit/buildkitd.sock"

// Output is one place the image goes.
type Output struct {
	Kind string // image (push), oci, docker, squashfs
	Dest string // the image ref for image, else a file
}

// Result is what a build produced.
type Result struct {
	Digest    string                     `json:"digest,omitempty"` // the image manifest digest
	Revisions provenance.SourceRevisions `json:"source_revisions"`
	// Platforms are the index's images, one per platform, each with what
	// it records (a build of one platform lists that one; Digest is then
	// its image's, else the index's).
	Platforms []PlatformImage `json:"platforms,omitempty"`
	Outputs   []Output        `json:"-"`
}

// Build builds the image of r through buildkitd.
func Build(ctx context.Context, r *Resolved, opts ...Option) (*Result, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	// kvsweep's checks before every build; BuildKit's own run in it
	// (solveImage sets BUILDKIT_DOCKERFILE_CHECK).
	if fs, err := Check(r); err != nil {
		return nil, err
	} else if len(fs) > 0 {
		return nil, &FindingsError{fs}
	}
	c, bkVersion, err := connect(ctx, o.addr, o.connect)
	if err != nil {
		return nil, err
	}
	defer c.Close()

	plan := MakePlan(r, o.version, bkVersion)
	tmp, err := os.MkdirTemp("", "kvsweep-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	solve := client.SolveOpt{Frontend: "dockerfile.v0", FrontendAttrs: maps.Clone(plan.FrontendAttrs)}
	if err := localMounts(&solve, r, plan, tmp); err != nil {
		return nil, err
	}
	res, err := solveImage(ctx, c, solve, o, plan.Revisions, tmp)
	if err != nil {
		return nil, err
	}
	return res, platformImages(ctx, res, plan, o)
}

// solveImage runs a solve whose frontend and local sources are set, with
// the outputs, cache and auth of o, and writes what comes after it (the
// squashfs files, the metadata file). rv is what the image records.
func solveImage(ctx context.Context, c *client.Client, solve client.SolveOpt, o *options, rv provenance.SourceRevisions, tmp string) (*Result, error) {
	// BuildKit's own Dockerfile checks fail the build, whatever the
	// Dockerfile's "# check=" directive says.
	solve.FrontendAttrs["build-arg:BUILDKIT_DOCKERFILE_CHECK"] = "error=true"
	solve.CacheExports, solve.CacheImports = o.cacheTo, o.cacheFrom
	squash := exports(&solve, o, rv, tmp)
	cfg := config.LoadDefaultConfigFile(io.Discard)
	solve.Session = []session.Attachable{authprovider.NewDockerAuthProvider(authprovider.DockerAuthProviderConfig{
		AuthConfigProvider: authprovider.LoadAuthConfig(cfg)})}
	resp, err := runSolve(ctx, c, solve, o)
	if err != nil {
		return nil, err
	}
	res := &Result{Digest: resp.ExporterResponse["containerimage.digest"], Revisions: rv, Outputs: o.outputs}
	return res, writeOutputs(ctx, res, o, squash)
}

// optionsOf applies the options of Build and Lint over their defaults.
func optionsOf(opts []Option) (*options, error) {
	o := &options{addr: os.Getenv("BUILDKIT_HOST"), progress: progressui.QuietMode, progressOut: io.Discard, connect: 10 * time.Second}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.addr == "" {
		o.addr = DefaultAddr
	}
	return o, nil
}

// buildOptions applies Build's options over its defaults: it needs an
// output.
func buildOptions(opts []Option) (*options, error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	if len(o.outputs) == 0 {
		return nil, errors.New("no output: push to a registry, or write oci:FILE, docker:FILE or squashfs:FILE")
	}
	return o, nil
}

// localMounts writes what the build reads from this machine under tmp
// (source-revisions.json, the embedded Dockerfile unless the pins name
// one) and mounts it with the KVCR checkout as the solve's local sources.
func localMounts(solve *client.SolveOpt, r *Resolved, plan *Plan, tmp string) error {
	_, embedded := EmbeddedDockerfile(r.engine())
	dfDir, err := dockerfileDir(tmp, r.Dockerfile, embedded)
	if err != nil {
		return err
	}
	mounts := map[string]string{"dockerfile": dfDir}
	// Each platform's record in a context of its own (ProvenanceContext).
	for pl, rv := range plan.Platforms {
		if mounts[ProvenanceContext(pl)], err = writeRevisions(tmp, ProvenanceContext(pl), rv); err != nil {
			return err
		}
	}
	if r.PythonLock != nil {
		// The bytes that were hashed, as the one name the Dockerfile copies.
		lockDir := filepath.Join(tmp, "python_lock")
		if err := os.MkdirAll(lockDir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(lockDir, LockName), r.PythonLock.Data, 0o644); err != nil {
			return err
		}
		mounts["python_lock"] = lockDir
	}
	if kv := r.Revisions[KVCR]; kv.Path != "" {
		mounts["context"] = kv.Path
	}
	return mount(solve, mounts, r.Dockerfile)
}

// writeRevisions writes rv as source-revisions.json into tmp/name, the
// named context the Dockerfile copies it from.
func writeRevisions(tmp, name string, rv provenance.SourceRevisions) (string, error) {
	revJSON, err := json.MarshalIndent(rv, "", "  ")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "source-revisions.json"), append(revJSON, '\n'), 0o644)
}

// dockerfileDir is the directory of the Dockerfile at path, or, for "",
// of the embedded one written under tmp.
func dockerfileDir(tmp, path string, embedded []byte) (string, error) {
	if path != "" {
		return filepath.Dir(path), nil
	}
	dir := filepath.Join(tmp, "dockerfile")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "Dockerfile"), embedded, 0o644)
}

// mount makes the directories the solve's local sources; "context" (the
// KVCR checkout) without its .git, which differs between clones of one
// commit. dockerfile is the Dockerfile's path ("" for the embedded one).
func mount(solve *client.SolveOpt, mounts map[string]string, dockerfile string) error {
	solve.FrontendAttrs["filename"] = "Dockerfile"
	if dockerfile != "" {
		solve.FrontendAttrs["filename"] = filepath.Base(dockerfile)
	}
	solve.LocalMounts = map[string]fsutil.FS{}
	for name, dir := range mounts {
		fs, err := fsutil.NewFS(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if name == "context" {
			if fs, err = fsutil.NewFilterFS(fs, &fsutil.FilterOpt{ExcludePatterns: []string{".git"}}); err != nil {
				return err
			}
		}
		solve.LocalMounts[name] = fs
	}
	return nil
}

// exports adds an exporter per output; it returns the directory the
// root file system is exported to for squashfs outputs ("" if none).
func exports(solve *client.SolveOpt, o *options, rv provenance.SourceRevisions, tmp string) (squash string) {
	for _, out := range o.outputs {
		attrs := map[string]string{"rewrite-timestamp": "true"}
		if o.dockerMediaTypes {
			// Docker's manifest has no annotations; the labels carry the record.
			attrs["oci-mediatypes"] = "false"
		} else {
			for k, v := range ociLabels(rv) {
				attrs["annotation."+k] = v
			}
		}
		switch out.Kind {
		case "image":
			attrs["name"], attrs["push"] = out.Dest, "true"
			if o.insecure {
				attrs["registry.insecure"] = "true"
			}
			solve.Exports = append(solve.Exports, client.ExportEntry{Type: client.ExporterImage, Attrs: attrs})
		case "oci", "docker":
			dest := out.Dest
			typ := client.ExporterOCI
			if out.Kind == "docker" {
				typ = client.ExporterDocker
				attrs["name"] = "kvcr-quick-start:" + shortCommit(rv.Components[KVCR].Commit)
			}
			solve.Exports = append(solve.Exports, client.ExportEntry{Type: typ, Attrs: attrs,
				Output: func(map[string]string) (io.WriteCloser, error) { return os.Create(dest) }})
		case "squashfs":
			squash = filepath.Join(tmp, "rootfs")
			solve.Exports = append(solve.Exports, client.ExportEntry{Type: client.ExporterLocal, OutputDir: squash})
		}
	}
	return squash
}

// runSolve runs the solve while the progress display follows it.
func runSolve(ctx context.Context, c *client.Client, solve client.SolveOpt, o *options) (*client.SolveResponse, error) {
	display, err := progressui.NewDisplay(o.progressOut, o.progress)
	if err != nil {
		return nil, err
	}
	ch := make(chan *client.SolveStatus)
	var resp *client.SolveResponse
	eg, ectx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		var err error
		resp, err = c.Solve(ectx, nil, solve, ch)
		return err
	})
	eg.Go(func() error {
		_, err := display.UpdateFrom(context.WithoutCancel(ectx), ch)
		return err
	})
	if err := eg.Wait(); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	return resp, nil
}

// writeOutputs makes the squashfs files from the exported root file
// system and writes the metadata file, once the solve is done.
func writeOutputs(ctx context.Context, res *Result, o *options, squash string) error {
	if squash != "" {
		for _, out := range o.outputs {
			if out.Kind == "squashfs" {
				if err := mksquashfs(ctx, squash, out.Dest); err != nil {
					return err
				}
			}
		}
	}
	if o.metadataFile != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.metadataFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// connect dials buildkitd and asks its version, so an unreachable daemon
// is a clear error within the timeout rather than a hang.
func connect(ctx context.Context, addr string, timeout time.Duration) (*client.Client, string, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.New(cctx, addr)
	if err != nil {
		return nil, "", fmt.Errorf("buildkitd at %s: %w", addr, err)
	}
	info, err := c.Info(cctx)
	if err != nil {
		c.Close()
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return nil, "", fmt.Errorf("buildkitd at %s did not answer within %s: is it running? (--buildkit-addr, $BUILDKIT_HOST): %v", addr, timeout, shortErr(err))
		}
		return nil, "", fmt.Errorf("buildkitd at %s could not be reached: is it running? (--buildkit-addr, $BUILDKIT_HOST): %v", addr, shortErr(err))
	}
	return c, info.BuildkitVersion.Version, nil
}

// mksquashfs packs a root file system for enroot (and pyxis): a squashfs
// whose root is the image's root. Options come from $KVSWEEP_SQUASHFS_OPTIONS.
func mksquashfs(ctx context.Context, dir, dest string) error {
	args := []string{dir, dest, "-noappend", "-all-root", "-no-progress"}
	if extra := os.Getenv("KVSWEEP_SQUASHFS_OPTIONS"); extra != "" {
		args = append(args, strings.Fields(extra)...)
	} else {
		args = append(args, "-comp", "gzip")
	}
	out, err := exec.CommandContext(ctx, "mksquashfs", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mksquashfs: %v: %s", err, lastLines(string(out), 5))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
