package readguard

import "fmt"

// Modes of the search → ref → read gate (seed 004: "read default policy is
// enforce").
const (
	ModeEnforce = "enforce" // a read without a valid ref or precision range is refused
	ModeWarn    = "warn"    // the gate reports its codes as warnings and never refuses
	ModeOff     = "off"     // no ref gate (budgets and relevance still apply)
)

// Config is the read guard's policy. Every limit is configurable (S-10).
type Config struct {
	MaxReads           int     `json:"max_reads_per_session"`
	MaxTotalLines      int     `json:"max_total_read_lines"`
	MaxSingleReadLines int     `json:"max_single_read_lines"`
	MaxPreviewChars    int     `json:"max_preview_chars"`
	SoftRatio          float64 `json:"soft_ratio"`
	MaxRangeLines      int     `json:"max_range_lines"`
	TopK               int     `json:"top_k"`
	Mode               string  `json:"mode"`
	// Budget is what a spent budget does: ModeEnforce refuses the read
	// (BUDGET_HARD_LIMIT, seed 004's default), ModeWarn lets it run with
	// the code as a warning: budgets as soft limits, for coding agents
	// whose reads a human steers (gate hook's default).
	Budget string `json:"budget"`
}

// DefaultConfig is seed 004's default policy: 25 reads, 2,500 lines, 300 per
// read, 12,000 preview chars, soft at 80%, precision reads of at most 200
// lines, a top-10 relevance baseline, enforce.
func DefaultConfig() Config {
	return Config{
		MaxReads:           25,
		MaxTotalLines:      2500,
		MaxSingleReadLines: 300,
		MaxPreviewChars:    12000,
		SoftRatio:          0.8,
		MaxRangeLines:      200,
		TopK:               10,
		Mode:               ModeEnforce,
		Budget:             ModeEnforce,
	}
}

// Validate names the first field that cannot work.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"max_reads_per_session", c.MaxReads},
		{"max_total_read_lines", c.MaxTotalLines},
		{"max_single_read_lines", c.MaxSingleReadLines},
		{"max_preview_chars", c.MaxPreviewChars},
		{"max_range_lines", c.MaxRangeLines},
		{"top_k", c.TopK},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s: %d is not positive", f.name, f.v)
		}
	}
	if !(c.SoftRatio > 0 && c.SoftRatio <= 1) {
		return fmt.Errorf("soft_ratio: %v is not in (0, 1]", c.SoftRatio)
	}
	switch c.Mode {
	case ModeEnforce, ModeWarn, ModeOff:
	default:
		return fmt.Errorf("mode: %q is not enforce, warn or off", c.Mode)
	}
	switch c.Budget {
	case "", ModeEnforce, ModeWarn: // "": enforce
	default:
		return fmt.Errorf("budget: %q is neither enforce nor warn", c.Budget)
	}
	return nil
}
