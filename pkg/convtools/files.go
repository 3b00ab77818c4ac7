package convtools

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/session/response"
	"github.com/govkit/govkit/pkg/termtext"
)

// Bounds of the file tools besides Runner.MaxOutput.
const (
	// MaxScanBytes bounds how far read_file reads into a file looking for
	// start_line.
	MaxScanBytes = 64 << 20
	// MaxSearchMatches bounds the lines a search returns.
	MaxSearchMatches = 100
	// MaxSearchFiles bounds the files a search opens.
	MaxSearchFiles = 20000
	// MaxSearchFileBytes: larger files are not searched.
	MaxSearchFileBytes = 4 << 20
	// maxLineShown bounds one line of a search result, in bytes.
	maxLineShown = 240
	// MaxPatchFileBytes bounds the files patch edits.
	MaxPatchFileBytes = 8 << 20
)

// inside turns p, relative to cwd or absolute, into a slash path relative
// to cwd, or says it is outside. It is lexical: os.Root then refuses what a
// symlink would take out of cwd, at every component, when the file is
// opened (REQ-BED-010: the conversation's directory is its world).
func inside(cwd, p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("path contains a NUL byte")
	}
	rel := filepath.Clean(p)
	if filepath.IsAbs(p) {
		var err error
		rel, err = filepath.Rel(cwd, rel)
		if err != nil || !local(rel) {
			// cwd may be named through a symlink (/tmp on some systems)
			// while the model names the real path.
			if real, rerr := filepath.EvalSymlinks(cwd); rerr == nil {
				rel, err = filepath.Rel(real, filepath.Clean(p))
			}
		}
		if err != nil || !local(rel) {
			return "", fmt.Errorf("path %s is outside the working directory %s", p, cwd)
		}
	}
	if !local(rel) {
		return "", fmt.Errorf("path %s is outside the working directory %s", p, cwd)
	}
	return filepath.ToSlash(rel), nil
}

func local(rel string) bool {
	return rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// rootErr words an os.Root error for the model: an escape is a refusal,
// the rest as the system says, with the path relative to cwd.
func rootErr(tool, rel string, err error) Result {
	switch {
	case strings.Contains(err.Error(), "path escapes from parent"):
		return refusal(response.InvalidInput, fmt.Sprintf("%s: %s leads outside the working directory (through .. or a symbolic link); refused", tool, rel))
	case errors.Is(err, fs.ErrNotExist):
		return refusal(response.NotFound, fmt.Sprintf("%s: %s does not exist", tool, rel))
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return refusal(response.ExecutionFailed, fmt.Sprintf("%s: %s: %v", tool, rel, err))
}

// openRegular opens rel under root for reading, refusing what is not a
// regular file (O_NONBLOCK: a FIFO must not hang the call).
func openRegular(root *os.Root, rel string) (*os.File, os.FileInfo, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readFile reads lines start..end of a file under cwd, bounded by
// MaxOutput; Lines and Chars count what it returns, for seed 004's read
// budgets.
func (r *Runner) readFile(call Call, a readArgs) Result {
	p := a.Path
	if p == "" {
		if call.RefPath == "" {
			return refusal(response.CandidateRefRequired, "read_file: candidate_id "+a.CandidateID+" was not issued by a search in this conversation; search first, or give a path")
		}
		p = call.RefPath
	}
	rel, err := inside(call.Cwd, p)
	if err != nil {
		return refusal(response.InvalidInput, "read_file: "+err.Error())
	}
	root, err := os.OpenRoot(call.Cwd)
	if err != nil {
		return refusal(response.ExecutionFailed, "read_file: "+err.Error())
	}
	defer root.Close()
	f, _, err := openRegular(root, rel)
	if err != nil {
		return rootErr("read_file", rel, err)
	}
	defer f.Close()
	start, end := 1, 0
	if a.StartLine != nil {
		start = *a.StartLine
	}
	if a.EndLine != nil {
		end = *a.EndLine
	}
	return readLines(f, rel, start, end, r.maxOutput())
}

// readLines returns lines start..end (end 0: to the end) of f, at most max
// bytes of them.
func readLines(f io.Reader, rel string, start, end int, max int64) Result {
	br := bufio.NewReaderSize(io.LimitReader(f, MaxScanBytes), 64<<10)
	var out bytes.Buffer
	res := Result{OK: true}
	n := 0 // lines read to their end
	for {
		// ReadSlice returns a line longer than the buffer in pieces
		// (ErrBufferFull); the line number moves on at its end.
		piece, err := br.ReadSlice('\n')
		no := n + 1
		want := no >= start && (end == 0 || no <= end)
		if want && len(piece) > 0 {
			if bytes.IndexByte(piece, 0) >= 0 {
				return refusal(response.InvalidInput, "read_file: "+rel+" is a binary file")
			}
			if !appendBounded(&out, piece, max) {
				res.Truncated = true
				res.Lines++ // the line it stopped in, partly shown
				break
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(piece) > 0 {
			n++
			if want {
				res.Lines++
			}
		}
		if err != nil || (end > 0 && n >= end) {
			break
		}
	}
	if start > 1 && n < start && !res.Truncated {
		return refusal(response.InvalidInput, fmt.Sprintf("read_file: %s has %d lines (read up to %d MiB); start_line %d is past its end", rel, n, MaxScanBytes>>20, start))
	}
	res.Output = strings.ToValidUTF8(out.String(), "\uFFFD")
	res.Chars = utf8.RuneCountInString(res.Output)
	if res.Truncated {
		res.Output += fmt.Sprintf("\n[truncated after %d bytes: read a narrower range with start_line and end_line]", max)
	}
	return res
}

// appendBounded appends p to out up to max bytes in all; false when it had
// to cut.
func appendBounded(out *bytes.Buffer, p []byte, max int64) bool {
	room := max - int64(out.Len())
	if int64(len(p)) <= room {
		out.Write(p)
		return true
	}
	if room > 0 {
		cut := p[:room]
		for len(cut) > 0 && !utf8.Valid(cut) {
			cut = cut[:len(cut)-1]
		}
		out.Write(cut)
	}
	return false
}

// search finds the lines containing query, literally, in the files under
// cwd (or under path), walking in lexical order; bounded in files opened,
// matches and bytes. Paths are the matching files, most matches first.
func (r *Runner) search(ctx context.Context, call Call, a searchArgs) Result {
	base := "."
	if a.Path != "" {
		rel, err := inside(call.Cwd, a.Path)
		if err != nil {
			return refusal(response.InvalidInput, "search: "+err.Error())
		}
		base = rel
	}
	root, err := os.OpenRoot(call.Cwd)
	if err != nil {
		return refusal(response.ExecutionFailed, "search: "+err.Error())
	}
	defer root.Close()
	if _, err := root.Stat(base); err != nil {
		return rootErr("search", base, err)
	}
	query := []byte(*a.Query)
	max := r.maxOutput()
	var out bytes.Buffer
	counts := map[string]int{}
	matches, files := 0, 0
	res := Result{OK: true}
	stop := errors.New("stop")
	werr := fs.WalkDir(root.FS(), base, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return nil // unreadable: skipped, as grep -s would
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != base {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if files >= MaxSearchFiles {
			res.Truncated = true
			return stop
		}
		f, fi, err := openRegular(root, p)
		if err != nil {
			return nil // a symlink out of cwd, a FIFO, a device: skipped
		}
		files++
		defer f.Close()
		if fi.Size() > MaxSearchFileBytes {
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(f, MaxSearchFileBytes))
		if err != nil || bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0 {
			return nil // unreadable or binary
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if !bytes.Contains(line, query) {
				continue
			}
			if matches >= MaxSearchMatches {
				res.Truncated = true
				return stop
			}
			entry := fmt.Sprintf("%s:%d: %s\n", p, i+1, shownLine(line))
			if int64(out.Len()+len(entry)) > max {
				res.Truncated = true
				return stop
			}
			out.WriteString(entry)
			matches++
			counts[p]++
		}
		return nil
	})
	if werr != nil && werr != stop {
		if ctx.Err() != nil {
			res := refusal(response.ExecutionFailed, "search: cancelled")
			res.Cancelled = true
			return res
		}
		return rootErr("search", base, werr)
	}
	res.Paths = make([]string, 0, len(counts))
	for p := range counts {
		res.Paths = append(res.Paths, p)
	}
	sort.Slice(res.Paths, func(i, j int) bool {
		a, b := res.Paths[i], res.Paths[j]
		if counts[a] != counts[b] {
			return counts[a] > counts[b]
		}
		return a < b
	})
	res.Output = out.String()
	switch {
	case matches == 0:
		res.Output = fmt.Sprintf("no match for %q in %d files under %s", *a.Query, files, base)
	case res.Truncated:
		res.Output += fmt.Sprintf("[stopped at %d matches: narrow the query or the path]\n", matches)
	}
	return res
}

// shownLine is a matching line as a search shows it: trimmed, cut to
// maxLineShown bytes at a rune boundary, valid UTF-8.
func shownLine(line []byte) string {
	line = bytes.TrimRight(line, "\r")
	return termtext.Truncate(strings.ToValidUTF8(string(line), "\uFFFD"), maxLineShown)
}

// patch replaces the one occurrence of old_text in a file under cwd, or
// creates a new file when old_text is empty. The write goes to a temp file
// beside it and is renamed over it, so a crash leaves the old or the new
// content, never half of it.
func (r *Runner) patch(call Call, a patchArgs) Result {
	rel, err := inside(call.Cwd, *a.Path)
	if err != nil {
		return refusal(response.InvalidInput, "patch: "+err.Error())
	}
	if rel == "." {
		return refusal(response.InvalidInput, "patch: path names the working directory itself, not a file")
	}
	root, err := os.OpenRoot(call.Cwd)
	if err != nil {
		return refusal(response.ExecutionFailed, "patch: "+err.Error())
	}
	defer root.Close()
	oldText, newText := *a.OldText, *a.NewText
	if oldText == "" {
		if dir := path.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return rootErr("patch", dir, err)
			}
		}
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return refusal(response.InvalidInput, "patch: "+rel+" exists; to change it, give the old_text to replace (an empty old_text only creates new files)")
		}
		if err != nil {
			return rootErr("patch", rel, err)
		}
		_, werr := f.WriteString(newText)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = root.Remove(rel)
			return rootErr("patch", rel, werr)
		}
		return Result{OK: true, Output: fmt.Sprintf("created %s (%d lines)", rel, lineCount(newText))}
	}
	fi, err := root.Lstat(rel)
	if err != nil {
		return rootErr("patch", rel, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return refusal(response.InvalidInput, "patch: "+rel+" is a symbolic link; patch the file it points to")
	}
	f, fi, err := openRegular(root, rel)
	if err != nil {
		return rootErr("patch", rel, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxPatchFileBytes+1))
	f.Close()
	if err != nil {
		return rootErr("patch", rel, err)
	}
	if len(data) > MaxPatchFileBytes {
		return refusal(response.InvalidInput, fmt.Sprintf("patch: %s is larger than %d bytes", rel, MaxPatchFileBytes))
	}
	content := string(data)
	switch n := occurrences(content, oldText); n {
	case 1:
	case 0:
		return refusal(response.InvalidInput, "patch: old_text matches 0 times in "+rel+"; it must match exactly once (read the file and copy the text exactly, whitespace included)")
	default:
		return refusal(response.InvalidInput, fmt.Sprintf("patch: old_text matches %d times in %s; it must match exactly once (include more surrounding lines to make it unique)", n, rel))
	}
	updated := strings.Replace(content, oldText, newText, 1)
	if err := replaceFile(root, rel, []byte(updated), fi.Mode().Perm()); err != nil {
		return rootErr("patch", rel, err)
	}
	return Result{OK: true, Output: fmt.Sprintf("patched %s: 1 replacement (%d lines replaced by %d)", rel, lineCount(oldText), lineCount(newText))}
}

// occurrences counts old in s, overlapping ones too: "aa" occurs twice in
// "aaa", and a replacement there would be ambiguous.
func occurrences(s, old string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(s[i:], old)
		if j < 0 {
			return n
		}
		n++
		if n > 1000 {
			return n
		}
		i += j + 1
		if i > len(s) {
			return n
		}
	}
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// replaceFile writes data to a temp file beside rel and renames it over rel.
func replaceFile(root *os.Root, rel string, data []byte, perm fs.FileMode) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(rel), "."+path.Base(rel)+".patch-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := f.Sync(); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = root.Remove(tmp)
	}
	return werr
}
