package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"sync"
	"unicode/utf8"
)

// ExcerptBytes bounds the excerpt of each stream kept in the report and the
// audit event (DESIGN §6 keeps the first 500 characters of a result).
const ExcerptBytes = 500

// Output describes one of the command's streams as the report gives it:
// seed 002's truncation with a hash, so that what the caller did not see
// can still be identified (the full size and the SHA-256 of every byte the
// command wrote, shown or not).
type Output struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Shown is how many bytes reached the caller: at most --max-output,
	// and none when the output was withheld.
	Shown     int64  `json:"shown"`
	Truncated bool   `json:"truncated,omitempty"` // more than --max-output was written
	Withheld  bool   `json:"withheld,omitempty"`  // held back by a refusal after execution
	Excerpt   string `json:"excerpt,omitempty"`   // the first ExcerptBytes, valid UTF-8
}

// stream passes a command's stream through to the caller up to a limit
// that it shares with the other stream, hashing every byte. With hold set
// it buffers what it would show instead, until release or withhold: the
// blast-radius check decides after execution whether the caller sees it.
type stream struct {
	mu      sync.Mutex
	to      io.Writer
	budget  *budget
	hold    bool
	held    []byte // while holding: everything written, up to holdCap
	showN   int64  // while holding: how much of held the budget lets the caller see
	over    bool   // while holding: more than holdCap was written
	sum     hash.Hash
	n       int64
	shown   int64
	trunc   bool
	excerpt []byte
	werr    error // the first error writing to the caller: later output is dropped
}

// holdCap bounds what a held stream keeps for the blast-radius parsers.
const holdCap = 16 << 20

// budget is the --max-output bytes both streams may still show.
type budget struct {
	mu   sync.Mutex
	left int64
}

func (b *budget) take(n int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, b.left)
	b.left -= n
	return n
}

func newStream(to io.Writer, b *budget, hold bool) *stream {
	return &stream{to: to, budget: b, hold: hold, sum: sha256.New()}
}

// Write never fails: a command must not die of SIGPIPE or EPIPE because
// gate stopped showing its output.
func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum.Write(p)
	s.n += int64(len(p))
	if len(s.excerpt) < ExcerptBytes {
		s.excerpt = append(s.excerpt, p[:min(len(p), ExcerptBytes-len(s.excerpt))]...)
	}
	show := s.budget.take(int64(len(p)))
	if show < int64(len(p)) {
		s.trunc = true
	}
	if show == 0 {
		return len(p), nil
	}
	if s.hold {
		s.showN += show
		keep := p
		if room := holdCap - len(s.held); room < len(p) {
			s.over = true
			keep = p[:max(room, 0)]
		}
		s.held = append(s.held, keep...)
		return len(p), nil
	}
	s.emit(p[:show])
	return len(p), nil
}

func (s *stream) emit(p []byte) {
	if s.to == nil || s.werr != nil {
		return
	}
	if _, err := s.to.Write(p); err != nil {
		s.werr = err
		return
	}
	s.shown += int64(len(p))
}

// release shows what was held.
func (s *stream) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit(s.held[:min(s.showN, int64(len(s.held)))])
	s.held, s.hold = nil, false
}

// withhold drops what was held: the caller sees none of it.
func (s *stream) withhold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = nil
}

// replaceHeld replaces what was held (the psql guard removes its marker
// lines from psql's stderr before the caller sees it).
func (s *stream) replaceHeld(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.showN = min(s.showN, int64(len(b)))
	s.held = b
}

// heldText is everything the command wrote while held, for the parsers of
// the blast-radius check; complete is false when it wrote more than
// holdCap, and a count from the text would be a guess.
func (s *stream) heldText() (text string, complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.held), !s.over
}

func (s *stream) report(withheld bool) *Output {
	s.mu.Lock()
	defer s.mu.Unlock()
	ex := s.excerpt
	for len(ex) > 0 && !utf8.Valid(ex) {
		ex = ex[:len(ex)-1] // cut inside a rune at the excerpt's end
	}
	o := &Output{Bytes: s.n, SHA256: hex.EncodeToString(s.sum.Sum(nil)), Shown: s.shown, Truncated: s.trunc, Withheld: withheld}
	if !withheld {
		o.Excerpt = string(ex)
	}
	return o
}
