package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Every kvsweep command the workflows run parses: the command and
// subcommand exist and every flag is one of theirs (actionlint checks the
// YAML and the shell, not kvsweep's flags). A flag renamed here fails
// this test before a workflow fails on a runner.
func TestWorkflowCommands(t *testing.T) {
	files, err := filepath.Glob("../../.github/workflows/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows: %v", err)
	}
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range workflowCommands(string(b)) {
			seen++
			if err := parses(cmd); err != nil {
				t.Errorf("%s: kvsweep %s: %v", filepath.Base(f), strings.Join(cmd, " "), err)
			}
		}
	}
	if seen < 5 {
		t.Errorf("found %d kvsweep commands in the workflows, want every one they run", seen)
	}
}

// workflowCommands are the words of each "./kvsweep ..." command in the
// run blocks of a workflow: continued lines ("\" at the end, or the
// lines of a folded "run: >" block) joined, quotes removed, the command
// ended by a pipe, a redirection, a ")" or ";".
func workflowCommands(src string) [][]string {
	lines := strings.Split(src, "\n")
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	var out [][]string
	for i := 0; i < len(lines); i++ {
		at := strings.Index(lines[i], "./kvsweep ")
		if at < 0 || strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
			continue
		}
		folded := foldedBlock(lines, i)
		text := lines[i][at+len("./kvsweep "):]
		for i+1 < len(lines) {
			next := lines[i+1]
			cont := strings.HasSuffix(strings.TrimSpace(text), "\\")
			if !cont && !(folded && strings.TrimSpace(next) != "" && indent(next) == indent(lines[i])) {
				break
			}
			text = strings.TrimSuffix(strings.TrimSpace(text), "\\") + " " + strings.TrimSpace(next)
			i++
		}
		out = append(out, shellWords(text))
	}
	return out
}

// foldedBlock says whether line i belongs to a "run: >" block (whose
// lines are one command).
func foldedBlock(lines []string, i int) bool {
	for j := i; j >= 0; j-- {
		s := strings.TrimSpace(lines[j])
		if strings.HasPrefix(s, "run:") || strings.HasPrefix(s, "- run:") {
			return strings.HasSuffix(s, ">")
		}
	}
	return false
}

var expr = regexp.MustCompile(`\$\{\{[^}]*\}\}`)

// shellWords splits a command line as the shell would, enough for the
// workflows: quotes removed, ${{ }} expressions kept as one word, and the
// words up to a pipe, redirection, ")" or ";".
func shellWords(s string) []string {
	s = expr.ReplaceAllString(s, "EXPR")
	var words []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case r == '|' || r == '>' || r == ')' || r == ';':
			if in {
				words = append(words, cur.String())
			}
			return words
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// parses parses args as kvsweep would, without running the command.
func parses(args []string) error {
	c := lookup(args[0])
	if c == nil {
		return fmt.Errorf("no command %q", args[0])
	}
	args = args[1:]
	if c.subs != nil {
		if len(args) == 0 {
			return fmt.Errorf("%s needs a subcommand", c.name)
		}
		var sub *command
		for _, s := range c.subs {
			if s.name == args[0] {
				sub = s
			}
		}
		if sub == nil {
			return fmt.Errorf("no subcommand %q", args[0])
		}
		c, args = sub, args[1:]
	}
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.setup(fs)
	return fs.Parse(args)
}
