// Package table writes rows as an aligned text table or a GitHub markdown
// table through olekukonko/tablewriter, with the settings kvsweep uses
// everywhere: headers exactly as given (tablewriter upper-cases them by
// default), no wrapping, cells trimmed.
package table

import (
	"bytes"
	"fmt"
	"io"
	"strings"

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

// Write renders header and rows to w.
func Write(w io.Writer, f Format, header []string, rows [][]string) error {
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
		// A pipe inside a cell would end the cell in markdown.
		rows = escapeRows(rows, "|", `\|`)
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
