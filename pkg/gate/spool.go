package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/statedir"
)

// Spool is the directory where gate keeps the incidents it could not report
// because auditd did not answer (seed 003 "Governance Misconfiguration
// Incidents": the violation must not be lost with the connection). Each
// incident is one file named by its incident_id, written atomically; Flush
// posts them at the next successful contact and removes each one auditd
// stored. The incident_id is the event_id auditd stores it under, so a
// flush that is interrupted and repeated never records one twice.
type Spool struct{ Dir string }

// maxSpooled bounds one spool file and one flush: the directory is gate's
// own, but a full disk or a stray file must not stall every run.
const (
	maxSpoolFile  = 1 << 20
	maxFlushFiles = 1000
)

// DefaultSpoolDir is $XDG_STATE_HOME/govkit/spool, or
// ~/.local/state/govkit/spool.
func DefaultSpoolDir() string {
	if d, err := statedir.Dir(); err == nil {
		return filepath.Join(d, "spool")
	}
	return filepath.Join(os.TempDir(), "govkit-spool")
}

// Put writes in to the spool and returns the file's path.
func (s Spool) Put(in govapi.IncidentInput) (string, error) {
	if in.IncidentID == "" {
		return "", errors.New("an incident needs an incident_id to be spooled")
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	path := filepath.Join(s.Dir, in.IncidentID+".json")
	if err := writeAtomic(path, append(b, '\n'), true); err != nil {
		return "", fmt.Errorf("spool: %w", err)
	}
	return path, nil
}

// writeAtomic writes b to path through a temporary file in the same
// directory and a rename, so that a reader (a flush, a script reading the
// report) never sees half of it; with sync it reaches the disk first.
func writeAtomic(path string, b []byte, sync bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".incoming-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil && sync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// WriteReport writes res as gate's --report JSON to path, atomically.
func WriteReport(path string, res Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'), false)
}

// Pending lists the spooled incident files, oldest first (incident ids
// sort by time).
func (s Spool) Pending() ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var files []string
	for _, e := range entries {
		if name := e.Name(); e.Type().IsRegular() && strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".") {
			files = append(files, filepath.Join(s.Dir, name))
		}
	}
	slices.Sort(files)
	return files, nil
}

// FlushResult says what a flush did.
type FlushResult struct {
	Sent []string // incident ids auditd stored (or had stored already)
	Left int      // files still spooled
}

// Flush posts every spooled incident to auditd and removes the ones it
// stored. It stops at the first failure to reach auditd (the rest waits
// for the next contact); a file auditd refuses as malformed is renamed
// *.rejected so that it neither blocks the spool nor disappears.
func (s Spool) Flush(ctx context.Context, c *client.Client) (FlushResult, error) {
	files, err := s.Pending()
	if err != nil {
		return FlushResult{}, err
	}
	var res FlushResult
	for i, path := range files {
		if i == maxFlushFiles {
			res.Left = len(files) - i
			break
		}
		in, err := readSpooled(path)
		if err != nil {
			_ = os.Rename(path, path+".rejected")
			continue
		}
		if _, err := c.CreateIncident(ctx, in); err != nil {
			var ae *client.Error
			if errors.As(err, &ae) && ae.StatusCode == http.StatusBadRequest {
				_ = os.Rename(path, path+".rejected")
				continue
			}
			res.Left = len(files) - i
			return res, err
		}
		if err := os.Remove(path); err != nil {
			return res, fmt.Errorf("spool: %w", err)
		}
		res.Sent = append(res.Sent, in.IncidentID)
	}
	return res, nil
}

func readSpooled(path string) (govapi.IncidentInput, error) {
	var in govapi.IncidentInput
	f, err := os.Open(path)
	if err != nil {
		return in, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSpoolFile+1))
	if err != nil {
		return in, err
	}
	if len(b) > maxSpoolFile {
		return in, fmt.Errorf("%s: larger than %d bytes", path, maxSpoolFile)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return in, fmt.Errorf("%s: %w", path, err)
	}
	if in.IncidentID == "" || in.IncidentID+".json" != filepath.Base(path) {
		return in, fmt.Errorf("%s: incident_id does not match the file name", path)
	}
	return in, nil
}
