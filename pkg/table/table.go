// Package table renders aligned, borderless text tables for the CLIs'
// terminal output (approvals list, govbot's report). It is its own package
// so that only the binaries that print tables link tablewriter: pkg/cli is
// in the classify hook, whose start-up time matters.
package table

import (
	"bytes"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Render returns header and rows as left-aligned columns two spaces apart,
// without borders or wrapping, each line prefixed with indent. Trailing
// blanks are trimmed: the renderer pads the last column too, which is
// noise in a terminal and in anything that compares output.
func Render(indent string, header []string, rows [][]string) (string, error) {
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Symbols:  tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{Separators: tw.SeparatorsNone, Lines: tw.LinesNone},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithPadding(tw.Padding{Right: "  ", Overwrite: true}),
	)
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return "", err
	}
	if err := t.Render(); err != nil {
		return "", err
	}
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(indent + strings.TrimRight(line, " \n") + "\n")
	}
	return out.String(), nil
}
