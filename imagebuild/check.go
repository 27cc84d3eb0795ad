package imagebuild

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/kvsweep/kvsweep/templates"
)

// Finding is one problem a check found, where it is.
type Finding struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", f.File, f.Line, f.Rule, f.Message)
}

// FindingsError is a build the checks refused.
type FindingsError struct{ Findings []Finding }

func (e *FindingsError) Error() string {
	lines := make([]string, len(e.Findings))
	for i, f := range e.Findings {
		lines[i] = "  " + f.String()
	}
	return fmt.Sprintf("the image would not build from the pins alone (%d findings; kvsweep image build --check lists them):\n%s", len(e.Findings), strings.Join(lines, "\n"))
}

// The rules of kvsweep's own checks: what would let two builds from the
// same pins install different code, or a pin that would not reach the
// build.
const (
	RuleFromFloats     = "from-floats"        // a base image by tag, or untagged
	RulePipFloats      = "pip-floats"         // pip installing from an index without hashes
	RuleAptFloats      = "apt-floats"         // apt installing a package without a version
	RuleDownloadFloats = "download-unchecked" // curl/wget/ADD of a URL with no checksum
	RuleArgUnused      = "arg-unused"         // a pinned build argument no ARG declares
	RuleLockMissing    = "lock-missing"       // the Dockerfile installs a lock the pins do not name
	RuleLockFloats     = "lock-unhashed"      // a lock requirement without a version and hash
	// RuleDownloadOneArch: a build for several platforms whose download
	// is one file, or checked by one SHA-256, for all of them.
	RuleDownloadOneArch = "download-one-arch"
)

// EmbeddedDockerfileName names the embedded Dockerfile of the vLLM engine
// in findings.
const EmbeddedDockerfileName = "templates/Dockerfile.quick-start-vllm"

// EmbeddedSGLangDockerfileName names the embedded Dockerfile of the SGLang
// engine in findings.
const EmbeddedSGLangDockerfileName = "templates/Dockerfile.quick-start-sglang"

// EmbeddedDockerfile is the embedded quick-start Dockerfile of an engine
// (one of Engines) and the name findings give it.
func EmbeddedDockerfile(engine string) (name string, src []byte) {
	if engine == EngineSGLang {
		return EmbeddedSGLangDockerfileName, templates.QuickStartSGLangDockerfile()
	}
	return EmbeddedDockerfileName, templates.QuickStartDockerfile()
}

// engine is the engine r's pins name (EngineVLLM without pins).
func (r *Resolved) engine() string {
	if r.Pins == nil || r.Pins.Engine == "" {
		return EngineVLLM
	}
	return r.Pins.Engine
}

// dockerfile returns the Dockerfile r builds and the name findings give
// it: the pins' dockerfile, else the engine's embedded one.
func dockerfile(r *Resolved) (name string, src []byte, err error) {
	if r.Dockerfile == "" {
		name, src = EmbeddedDockerfile(r.engine())
		return name, src, nil
	}
	src, err = os.ReadFile(r.Dockerfile)
	return r.Dockerfile, src, err
}

// Check runs kvsweep's own checks over the Dockerfile r builds and the
// build arguments its pins set: nothing may float (a base by tag, pip,
// apt or a download without a version and checksum) and every pinned
// build argument must be declared by an ARG. Findings are in line order.
func Check(r *Resolved) ([]Finding, error) {
	name, src, err := dockerfile(r)
	if err != nil {
		return nil, err
	}
	fs, facts, err := checkDockerfile(name, src)
	if err != nil {
		return nil, err
	}
	args := facts.args
	switch {
	case facts.lockLine > 0 && r.PythonLock == nil:
		fs = append(fs, Finding{File: name, Line: facts.lockLine, Rule: RuleLockMissing,
			Message: "COPY --from=python_lock: the pins name no python_lock, the lock file of every Python input by version and hash (docs/image.md says how to make one)"})
	case r.PythonLock != nil:
		fs = append(fs, checkLock(r.Pins.PythonLock, r.PythonLock.Data)...)
	}
	for _, k := range r.Pins.ArgKeys {
		if missing := undeclared(r, k, args); missing != "" {
			f := Finding{File: r.Pins.File, Line: r.Pins.argLines[k], Rule: RuleArgUnused,
				Message: fmt.Sprintf("build_args.%s: %s declares no ARG %s, so the value would not reach the build (and source-revisions.json would record what was not used)", k, filepath.Base(name), missing)}
			fs = append(fs, f)
		}
	}
	fs = append(fs, checkPlatforms(r, name, facts)...)
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return fs, nil
}

// dockerfileFacts is what the checks of the pins need to know of a
// Dockerfile.
type dockerfileFacts struct {
	args     map[string]bool // the build arguments it declares
	lockLine int             // the line copying from python_lock, or 0
	// downloads are the RUNs that download (curl, wget): line and text.
	downloads []download
}

// checkDockerfile checks one Dockerfile.
func checkDockerfile(name string, src []byte) ([]Finding, dockerfileFacts, error) {
	res, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		return nil, dockerfileFacts{}, fmt.Errorf("%s: %w", name, err)
	}
	facts := dockerfileFacts{args: map[string]bool{}}
	var out []Finding
	add := func(n *parser.Node, rule, format string, a ...any) {
		out = append(out, Finding{File: name, Line: n.StartLine, Rule: rule, Message: fmt.Sprintf(format, a...)})
	}
	stages := map[string]bool{"scratch": true}
	for _, n := range res.AST.Children {
		words := nodeWords(n)
		switch strings.ToLower(n.Value) {
		case "arg":
			for _, w := range words {
				k, _, _ := strings.Cut(w, "=")
				facts.args[k] = true
			}
		case "copy":
			if slices.Contains(n.Flags, "--from=python_lock") && facts.lockLine == 0 {
				facts.lockLine = n.StartLine
			}
		case "from":
			checkFrom(n, words, stages, add)
		case "add":
			if !slices.ContainsFunc(n.Flags, func(f string) bool { return strings.HasPrefix(f, "--checksum=") }) &&
				slices.ContainsFunc(words, isURL) {
				add(n, RuleDownloadFloats, "ADD of a URL without --checksum=sha256:...: what it downloads can change")
			}
		case "run":
			checkRun(n, strings.Join(words, " "), add)
			facts.downloads = appendDownload(facts.downloads, n.StartLine, strings.Join(words, " "))
		}
	}
	return out, facts, nil
}

// checkLock checks that every requirement of a pip lock file pins a
// version (==) and at least one hash, as --require-hashes will.
func checkLock(name string, data []byte) []Finding {
	var out []Finding
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		start := i
		logical := lines[i]
		for strings.HasSuffix(strings.TrimSpace(logical), "\\") && i+1 < len(lines) {
			i++
			logical = strings.TrimSuffix(strings.TrimSpace(logical), "\\") + " " + lines[i]
		}
		req, _, _ := strings.Cut(logical, "#")
		req = strings.TrimSpace(req)
		if req == "" || strings.HasPrefix(req, "-") {
			continue
		}
		spec := strings.Fields(req)[0]
		if !strings.Contains(spec, "==") || !strings.Contains(req, "--hash=sha256:") {
			out = append(out, Finding{File: name, Line: start + 1, Rule: RuleLockFloats,
				Message: fmt.Sprintf("%s: every requirement needs NAME==VERSION and --hash=sha256:... (pip-compile --generate-hashes, uv pip compile --generate-hashes)", spec)})
		}
	}
	return out
}

// checkFrom: a FROM names a build argument (which kvsweep sets to a
// digest), an earlier stage, or an image by digest.
func checkFrom(n *parser.Node, words []string, stages map[string]bool, add func(*parser.Node, string, string, ...any)) {
	if len(words) == 0 {
		return
	}
	img := words[0]
	if len(words) >= 3 && strings.EqualFold(words[1], "as") {
		stages[strings.ToLower(words[2])] = true
	}
	if strings.Contains(img, "$") || stages[strings.ToLower(img)] || strings.Contains(img, "@sha256:") {
		return
	}
	add(n, RuleFromFloats, "FROM %s is not pinned by digest: a tag can move to other content (use NAME:TAG@sha256:..., or a build argument the pins set)", img)
}

// checkRun looks at each command of a RUN's shell text.
func checkRun(n *parser.Node, text string, add func(*parser.Node, string, string, ...any)) {
	checked := strings.Contains(text, "sha256sum -c") || strings.Contains(text, "sha512sum -c")
	for _, cmd := range shellCommands(text) {
		switch {
		case isPipInstall(cmd):
			if !pipPinned(cmd) {
				add(n, RulePipFloats, "%q installs from a package index without hashes: use --require-hashes with a lock file the pins name (python_lock), or --no-index, or --no-deps with local paths only", strings.Join(cmd, " "))
			}
		case isAptInstall(cmd):
			for _, p := range positional(cmd[2:]) {
				if !strings.Contains(p, "=") {
					add(n, RuleAptFloats, "apt installs %s without a version: write %s=VERSION", p, p)
				}
			}
		case len(cmd) > 0 && (cmd[0] == "curl" || cmd[0] == "wget") && !checked:
			add(n, RuleDownloadFloats, "%s downloads without a checksum check in the same RUN: compare with sha256sum -c against a pinned build argument", cmd[0])
		}
	}
	if pipedShellRE.MatchString(text) {
		add(n, RuleDownloadFloats, "a download piped into a shell runs whatever is served: download, check the checksum, then run it")
	}
}

// pipedShellRE finds "... | sh" and "| bash" (not "| sha256sum").
var pipedShellRE = regexp.MustCompile(`\|\s*(ba)?sh(\s|$|;|&|\))`)

// nodeWords are the arguments of an instruction, unquoted.
func nodeWords(n *parser.Node) []string {
	var out []string
	for a := n.Next; a != nil; a = a.Next {
		out = append(out, a.Value)
	}
	return out
}

// shellCommands splits shell text into simple commands (on &&, ||, ;, |
// and line breaks) of words, quotes removed; enough to find what runs.
func shellCommands(text string) [][]string {
	var cmds [][]string
	var cur []string
	var word strings.Builder
	inWord := false
	var quote rune
	flushWord := func() {
		if inWord {
			cur = append(cur, word.String())
			word.Reset()
			inWord = false
		}
	}
	flushCmd := func() {
		flushWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
			cur = nil
		}
	}
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				word.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(rs):
			i++
			if rs[i] != '\n' {
				word.WriteRune(rs[i])
				inWord = true
			}
		case c == ' ' || c == '\t':
			flushWord()
		case c == '&' || c == '|' || c == ';' || c == '\n' || c == '(' || c == ')' || c == '{' || c == '}':
			flushCmd()
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	flushCmd()
	// Leading assignments and wrappers do not change what runs.
	for i, cmd := range cmds {
		for len(cmd) > 1 && (strings.Contains(cmd[0], "=") && !strings.HasPrefix(cmd[0], "-") || cmd[0] == "then" || cmd[0] == "do" || cmd[0] == "else" || cmd[0] == "if" || cmd[0] == "!") {
			cmd = cmd[1:]
		}
		cmds[i] = cmd
	}
	return cmds
}

func isPipInstall(cmd []string) bool {
	for i, w := range cmd {
		if w == "install" && i > 0 && (strings.HasPrefix(filepath.Base(cmd[i-1]), "pip") || cmd[i-1] == "pip") {
			return true
		}
	}
	return false
}

// pipPinned: hashes required, no index, or no dependencies and only
// local paths.
func pipPinned(cmd []string) bool {
	if slices.Contains(cmd, "--require-hashes") || slices.Contains(cmd, "--no-index") {
		return true
	}
	if !slices.Contains(cmd, "--no-deps") {
		return false
	}
	i := slices.Index(cmd, "install")
	for _, p := range positional(cmd[i+1:]) {
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "$") {
			return false
		}
	}
	return true
}

func isAptInstall(cmd []string) bool {
	return len(cmd) > 2 && (cmd[0] == "apt-get" || cmd[0] == "apt") && slices.Contains(cmd, "install")
}

// positional are the words that are not options (nor "install").
func positional(words []string) []string {
	var out []string
	for _, w := range words {
		if !strings.HasPrefix(w, "-") && w != "install" {
			out = append(out, w)
		}
	}
	return out
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "git@")
}
