package cli

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/spf13/cobra"
)

// Format is the value of the shared -o/--output flag (DESIGN §3). The zero
// value means "not chosen": Resolve picks text for a terminal, json otherwise.
type Format string

const (
	FormatAuto Format = ""
	FormatText Format = "text"
	FormatJSON Format = "json"
)

var errFormat = errors.New("output format must be text or json")

// String implements pflag.Value.
func (f *Format) String() string { return string(*f) }

// Set implements pflag.Value; it accepts only text and json.
func (f *Format) Set(s string) error {
	switch Format(s) {
	case FormatText, FormatJSON:
		*f = Format(s)
		return nil
	}
	return errFormat
}

// Type implements pflag.Value; it names the argument in --help.
func (f *Format) Type() string { return "format" }

// Resolve returns the format to print in: the chosen one, or text when
// stdout is a terminal and json when it is not.
func (f Format) Resolve(s *IOStreams) Format {
	if f != FormatAuto {
		return f
	}
	if s.IsStdoutTTY() {
		return FormatText
	}
	return FormatJSON
}

// AddOutputFlag declares -o/--output on cmd, storing the choice in f, with
// shell completion of its two values.
func AddOutputFlag(cmd *cobra.Command, f *Format) {
	cmd.Flags().VarP(f, "output", "o", "output `format`: text or json (default: text on a terminal, json otherwise)")
	_ = cmd.RegisterFlagCompletionFunc("output",
		cobra.FixedCompletions([]string{string(FormatText), string(FormatJSON)}, cobra.ShellCompDirectiveNoFileComp))
}

// WriteJSON writes v as one line of JSON, the form of every command's JSON
// output (DESIGN §3: one object, or one object a line for streams and
// batches): compact, newline-terminated, with & < > left as they are so
// that commands and URLs read as written. The schema_version is v's to
// carry. A failure to write is an exit-3 error.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return Failf("writing the output: %v", err)
	}
	return nil
}
