package hookgate

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/govkit/govkit/pkg/termtext"
)

// Bounds on what is taken from a tool's response and a transcript: both
// come from the agent, and a hook must answer in milliseconds.
const (
	maxToolText   = 1 << 20
	maxListed     = 1000
	maxTranscript = 1 << 20
	maxFinalText  = 64 << 10
)

// toolText is the text a tool produced, from the shapes agents report it
// in: a string; Claude's Read {file:{content}} and Bash {stdout, stderr};
// {content|output|llmContent|result: string}; MCP's content blocks
// [{type:"text", text}]. Anything else is its JSON.
func toolText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return termtext.Truncate(string(raw), maxToolText)
	}
	if t, ok := textOf(v); ok {
		return termtext.Truncate(t, maxToolText)
	}
	return termtext.Truncate(string(raw), maxToolText)
}

func textOf(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []any:
		var b strings.Builder
		for _, x := range v {
			if m, ok := x.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String(), b.Len() > 0
	case map[string]any:
		if f, ok := v["file"].(map[string]any); ok {
			if t, ok := f["content"].(string); ok {
				return t, true
			}
		}
		if out, ok := v["stdout"].(string); ok {
			errText, _ := v["stderr"].(string)
			return out + errText, true
		}
		for _, k := range []string{"content", "output", "llmContent", "result", "text"} {
			if t, ok := textOf(v[k]); ok && v[k] != nil {
				return t, true
			}
		}
	}
	return "", false
}

// listedPaths are the paths a search or listing reported, absolute
// against base: arrays of names under filenames/files/paths/matches (or
// objects with a path), else the text's lines — plain paths, "[FILE] x" and
// "[DIR] x" entries, grep's "path:line:…" and Claude's LS tree of "- name"
// lines. At most maxListed.
func listedPaths(raw json.RawMessage, base string) []string {
	var out []string
	add := func(p string) {
		p = strings.TrimSpace(p)
		if p == "" || len(out) >= maxListed || strings.ContainsAny(p, "\x00\n") {
			return
		}
		if abs := absPath(p, base); abs != "" {
			out = append(out, abs)
		}
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		if m, ok := v.(map[string]any); ok {
			found := false
			for _, k := range []string{"filenames", "files", "paths", "matches", "results"} {
				list, ok := m[k].([]any)
				if !ok {
					continue
				}
				found = true
				for _, x := range list {
					switch x := x.(type) {
					case string:
						add(x)
					case map[string]any:
						for _, f := range []string{"path", "file", "filePath"} {
							if s, ok := x[f].(string); ok {
								add(s)
								break
							}
						}
					}
				}
			}
			if found {
				return out
			}
		}
	}
	var dirs []string // Claude's LS tree: the directory of each depth
	for _, line := range strings.Split(toolText(raw), "\n") {
		if len(out) >= maxListed {
			break
		}
		trimmed := strings.TrimLeft(line, " ")
		if rest, ok := strings.CutPrefix(trimmed, "- "); ok {
			depth := (len(line) - len(trimmed)) / 2
			if depth > len(dirs) {
				continue // a malformed tree
			}
			dirs = dirs[:depth]
			name := strings.TrimSuffix(rest, "/")
			p := name
			if depth > 0 {
				p = filepath.Join(dirs[depth-1], name)
			}
			if strings.HasSuffix(rest, "/") {
				dirs = append(dirs, absPath(p, base))
			}
			add(p)
			continue
		}
		for _, prefix := range []string{"[FILE] ", "[DIR] "} {
			trimmed = strings.TrimPrefix(trimmed, prefix)
		}
		if i := strings.IndexByte(trimmed, ':'); i > 0 && i+1 < len(trimmed) && trimmed[i+1] >= '0' && trimmed[i+1] <= '9' {
			trimmed = trimmed[:i] // grep -n: path:line:text
		}
		add(trimmed)
	}
	return out
}

// LastAssistantText is the text of the last assistant message in a coding
// agent's JSON Lines transcript (Claude Code's transcript_path: lines of
// {"type":"assistant","message":{"content":[{"type":"text","text":…}]}}),
// reading at most its last MiB.
func LastAssistantText(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(fi.Size()-maxTranscript, 0)
	buf, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return "", err
	}
	lines := bytes.Split(buf, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		var entry struct {
			Type    string `json:"type"`
			Message struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(lines[i], &entry) != nil {
			continue
		}
		if entry.Type != "assistant" && entry.Message.Role != "assistant" {
			continue
		}
		if t, ok := textOf(entry.Message.Content); ok && strings.TrimSpace(t) != "" {
			return termtext.Truncate(t, maxFinalText), nil
		}
	}
	return "", nil
}
