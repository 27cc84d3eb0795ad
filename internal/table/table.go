// Package table writes rows as an aligned text table or a GitHub markdown
// table through olekukonko/tablewriter, with the settings kvsweep uses
// everywhere: headers exactly as given (tablewriter upper-cases them by
// default), no wrapping, cells trimmed.
package table

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Format of a table.
type Format string

const (
	Text     Format = "table"
	Markdown Format = "markdown"
)

// Write renders header and rows to w. Control characters in a cell (an
// escape sequence, a newline) are shown as escapes (Visible): a table
// reaches terminals and CI logs, and its text may come from the code
// under test.
func Write(w io.Writer, f Format, header []string, rows [][]string) error {
	header, rows = visibleCells(header), visibleRows(rows)
	if f == Markdown {
		// A pipe inside a cell would end the cell in markdown.
		rows = escapeRows(rows, "|", `\|`)
		if plainASCII(header, rows) {
			return writeMarkdown(w, header, rows)
		}
	}
	return writeTablewriter(w, f, header, rows)
}

// writeTablewriter is Write through tablewriter (markdown cells escaped).
func writeTablewriter(w io.Writer, f Format, header []string, rows [][]string) error {
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	}
	switch f {
	case Markdown:
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	case Text:
		opts = append(opts, tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleASCII),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.On},
				Lines:      tw.Lines{ShowHeaderLine: tw.On},
			},
		})))
	default:
		return fmt.Errorf("unknown table format %q", f)
	}
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf, opts...)
	t.Header(header)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	// tablewriter pads the last column; trailing blanks only get in the
	// way of diffs and golden files.
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	for _, l := range lines {
		trimmed := bytes.TrimRight(l, " \n")
		if len(l) > 0 && l[len(l)-1] == '\n' {
			trimmed = append(trimmed, '\n')
		}
		if _, err := w.Write(trimmed); err != nil {
			return err
		}
	}
	return nil
}

// Visible is s with its control characters (C0 and C1, DEL), Unicode's
// bidirectional overrides and isolates (which reorder what a terminal
// shows) and invalid UTF-8 written as Go escapes: \x1b, \n, \u202e.
// Text without them is returned as it is.
func Visible(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case r < 0x20 || r >= 0x7f && r < 0xa0:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// visibleCells is cells through Visible, copied only where one changes.
func visibleCells(cells []string) []string {
	var out []string
	for i, c := range cells {
		if v := Visible(c); v != c {
			if out == nil {
				out = slices.Clone(cells)
			}
			out[i] = v
		}
	}
	if out == nil {
		return cells
	}
	return out
}

// visibleRows is rows through Visible, copied only where a cell changes.
func visibleRows(rows [][]string) [][]string {
	var out [][]string
	for i, r := range rows {
		if v := visibleCells(r); !slices.Equal(v, r) {
			if out == nil {
				out = slices.Clone(rows)
			}
			out[i] = v
		}
	}
	if out == nil {
		return rows
	}
	return out
}

func escapeRows(rows [][]string, old, new string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = make([]string, len(r))
		for j, c := range r {
			out[i][j] = strings.ReplaceAll(c, old, new)
		}
	}
	return out
}

// plainASCII says whether every cell is printable ASCII on one line and
// no row is longer than the header: tables writeMarkdown lays out as
// tablewriter does.
func plainASCII(header []string, rows [][]string) bool {
	ok := func(cells []string) bool {
		for _, c := range cells {
			for i := 0; i < len(c); i++ {
				if c[i] < 0x20 || c[i] > 0x7e {
					return false
				}
			}
		}
		return true
	}
	if !ok(header) {
		return false
	}
	for _, r := range rows {
		if len(r) > len(header) || !ok(r) {
			return false
		}
	}
	return true
}

// writeMarkdown is tablewriter's markdown table of plain ASCII cells,
// byte for byte (TestMarkdownAsTablewriter), without its per-cell layout
// work: a summary of 10,000 cells is laid out in milliseconds.
func writeMarkdown(w io.Writer, header []string, rows [][]string) error {
	widths := make([]int, len(header))
	for j, c := range header {
		widths[j] = max(1, len(strings.TrimSpace(c)))
	}
	for _, r := range rows {
		for j, c := range r {
			widths[j] = max(widths[j], len(strings.TrimSpace(c)))
		}
	}
	// Every line is as long as the header's: room for them all at once
	// (grown by doubling, a 10,000-row table's buffer was half of
	// WriteSummary's time in the profile, copying and zeroing).
	lineLen := 2
	for _, width := range widths {
		lineLen += width + 3
	}
	lines := 2
	for _, r := range rows {
		if len(r) > 0 {
			lines++
		}
	}
	var b bytes.Buffer
	b.Grow(lineLen * lines)
	line := func(cells []string) {
		b.WriteByte('|')
		for j, width := range widths {
			c := ""
			if j < len(cells) {
				c = strings.TrimSpace(cells[j])
			}
			b.WriteByte(' ')
			b.WriteString(c)
			for k := len(c); k < width; k++ {
				b.WriteByte(' ')
			}
			b.WriteString(" |")
		}
		b.WriteByte('\n')
	}
	line(header)
	b.WriteByte('|')
	for _, width := range widths {
		b.WriteByte(':')
		b.WriteString(strings.Repeat("-", width+1))
		b.WriteByte('|')
	}
	b.WriteByte('\n')
	for _, r := range rows {
		if len(r) > 0 { // tablewriter leaves out a row without cells
			line(r)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
