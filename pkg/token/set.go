package token

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// CheckInterval is how often a Set looks at its file.
const CheckInterval = time.Second

// Set is a tokens file that reloads itself: Authenticate re-reads the file
// when its identity (inode), size or modification time changed, checked at
// most once per CheckInterval, so that `auditd token create` takes effect
// without a restart and a revoked token stops working within a second. A
// file that became invalid or unreadable keeps the previous tokens and is
// reported once through the log func (again only when the problem changes).
// A Set is safe for concurrent use.
type Set struct {
	path string
	logf func(string, ...any)
	now  func() time.Time

	cur atomic.Pointer[File]

	mu        sync.Mutex // guards the fields below: one goroutine checks
	nextCheck time.Time
	seen      os.FileInfo // the file last read, valid or not; nil after a failed stat
	lastErr   string      // the problem last reported, "" after a good load
}

// NewSet loads the tokens file at path; it fails if the file cannot be
// loaded. logf receives one line per reload and per new problem (nil: no
// log); now is the clock (nil: time.Now).
func NewSet(path string, logf func(string, ...any), now func() time.Time) (*Set, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if now == nil {
		now = time.Now
	}
	s := &Set{path: path, logf: logf, now: now}
	// Stat before reading: a change in between is seen at the next check.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f, err := Load(path)
	if err != nil {
		return nil, err
	}
	s.cur.Store(f)
	s.seen = fi
	s.nextCheck = now().Add(CheckInterval)
	return s, nil
}

// Path returns the tokens file's path.
func (s *Set) Path() string { return s.path }

// File returns the tokens in use now.
func (s *Set) File() *File { return s.cur.Load() }

// Len returns the number of tokens in use now.
func (s *Set) Len() int { return s.cur.Load().Len() }

// Authenticate returns the identity of bearer, reloading the file first if
// it changed (see Set).
func (s *Set) Authenticate(bearer string) (Identity, bool) {
	s.refresh()
	return s.cur.Load().Lookup(bearer)
}

func (s *Set) refresh() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Before(s.nextCheck) {
		return
	}
	s.nextCheck = now.Add(CheckInterval)
	fi, err := os.Stat(s.path)
	if err != nil {
		s.seen = nil
		s.report("tokens file " + s.path + ": " + unwrapPathError(err).Error())
		return
	}
	if s.seen != nil && os.SameFile(s.seen, fi) && fi.Size() == s.seen.Size() && fi.ModTime().Equal(s.seen.ModTime()) {
		return
	}
	s.seen = fi
	f, err := Load(s.path)
	if err != nil {
		s.report(err.Error())
		return
	}
	s.cur.Store(f)
	s.lastErr = ""
	s.logf("tokens file %s reloaded: %d tokens", s.path, f.Len())
}

// report logs a problem unless it is the one reported last.
func (s *Set) report(msg string) {
	if first, _, more := strings.Cut(msg, "\n"); more {
		msg = first + " (and more)"
	}
	if msg == s.lastErr {
		return
	}
	s.lastErr = msg
	s.logf("%s; still using the %d tokens loaded before", msg, s.cur.Load().Len())
}
