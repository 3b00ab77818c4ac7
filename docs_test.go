package govkit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/govkit/govkit/internal/cmdtree"
	auditdsrv "github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/token"
)

// The documentation checks of issue 20: users have this repository only,
// so README.md and docs/ must say what is true of the code and never send a
// reader elsewhere.

// docRoute is a route heading of docs/api.md ("### `GET /api/events`") and
// the text of its section.
var docRoute = regexp.MustCompile("^### `([A-Z]+) (/[^`]*)`$")

// TestAPIDocListsEveryRoute checks docs/api.md against the router: every
// route auditd.Routes lists has a section whose "**Roles:**" line names
// exactly its roles ("none" for none), and every route section names a
// route that exists.
func TestAPIDocListsEveryRoute(t *testing.T) {
	doc, err := os.ReadFile("docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{} // "METHOD PATH" → section text
	var current string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "#") {
			current = ""
			if m := docRoute.FindStringSubmatch(line); m != nil {
				current = m[1] + " " + m[2]
				if _, dup := sections[current]; dup {
					t.Errorf("docs/api.md documents %s twice", current)
				}
				sections[current] = ""
			}
			continue
		}
		if current != "" {
			sections[current] += line + "\n"
		}
	}
	routes := auditdsrv.Routes()
	if len(routes) == 0 {
		t.Fatal("auditd.Routes lists no route")
	}
	served := map[string]bool{}
	for _, r := range routes {
		key := r.Method + " " + r.Path
		served[key] = true
		text, ok := sections[key]
		if !ok {
			t.Errorf("docs/api.md has no section \"### `%s`\" for a route auditd serves", key)
			continue
		}
		got, found := docRoles(text)
		if !found {
			t.Errorf("docs/api.md, %s: no **Roles:** line", key)
			continue
		}
		want := []string{"none"}
		if len(r.Roles) > 0 {
			want = roleNames(r.Roles)
		}
		if !slices.Equal(got, want) {
			t.Errorf("docs/api.md, %s: roles %v, but the router allows %v", key, got, want)
		}
		if !strings.Contains(text, "curl ") {
			t.Errorf("docs/api.md, %s: no example curl", key)
		}
	}
	for key := range sections {
		if !served[key] {
			t.Errorf("docs/api.md documents %s, which auditd does not serve", key)
		}
	}
}

// docRoles reads the backquoted names of a section's "**Roles:**" line,
// sorted; "none" when the line says none.
func docRoles(section string) ([]string, bool) {
	for _, line := range strings.Split(section, "\n") {
		rest, ok := strings.CutPrefix(line, "**Roles:**")
		if !ok {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(rest), "none") {
			return []string{"none"}, true
		}
		var roles []string
		for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(rest, -1) {
			roles = append(roles, m[1])
		}
		slices.Sort(roles)
		return roles, true
	}
	return nil, false
}

func roleNames(roles []token.Role) []string {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	slices.Sort(names)
	return names
}

// userDocs are the files a user reads: README.md, docs/*.md, and the
// commented files they copy (the example policy and infra files, the
// deployment units).
func userDocs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "policies.example.yaml"}
	for _, pattern := range []string{"docs/*.md", "docs/man/*.1", "examples/*.yaml", "examples/*/*", "scripts/systemd/*", "scripts/k8s/*"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

// outsideReference matches what sends a reader out of the repository: the
// design document and its sections, the seed documents (by file, or by
// their numbers), the directory they live in.
var outsideReference = regexp.MustCompile(`DESIGN|SEED|seeds/|\.\./shared|(?i:\bseeds? 00[0-9]|\bseeds (?:00[0-9], )*00[0-9] and 00[0-9])`)

// TestDocsStayInTheRepo checks that no user-facing text points at a file
// outside this repository (issue 20): the docs, the files users copy, and
// every help text of every binary (from which docs/man is generated).
// Provenance may name the seed systems in words; a reader never needs them.
func TestDocsStayInTheRepo(t *testing.T) {
	for _, f := range userDocs(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outsideReference.FindString(line); m != "" {
				t.Errorf("%s:%d: %q sends the reader outside the repository: %s", f, i+1, m, strings.TrimSpace(line))
			}
		}
	}
	for _, root := range commandRoots() {
		walkHelp(root, func(where, text string) {
			for i, line := range strings.Split(text, "\n") {
				if m := outsideReference.FindString(line); m != "" {
					t.Errorf("%s, line %d: %q sends the reader outside the repository: %s", where, i+1, m, strings.TrimSpace(line))
				}
			}
		})
	}
}

// commandRoots returns the command tree of every binary.
func commandRoots() []*cobra.Command {
	streams, _, _, _ := cli.Test()
	return cmdtree.Roots(streams)
}

// walkHelp calls fn with every help text of cmd and its subcommands: use
// line, short and long descriptions, examples, and each flag's usage.
func walkHelp(cmd *cobra.Command, fn func(where, text string)) {
	name := cmd.CommandPath()
	for _, part := range []struct{ what, text string }{
		{"use", cmd.Use}, {"short", cmd.Short}, {"long", cmd.Long}, {"example", cmd.Example},
	} {
		fn(name+" "+part.what, part.text)
	}
	visit := func(f *pflag.Flag) { fn(fmt.Sprintf("%s --%s", name, f.Name), f.Usage) }
	cmd.LocalFlags().VisitAll(visit)
	cmd.PersistentFlags().VisitAll(visit)
	for _, sub := range cmd.Commands() {
		walkHelp(sub, fn)
	}
}

// mdLink is a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// docsPath is a path into docs/ named in the text, linked or not.
var docsPath = regexp.MustCompile("(?:^|[\\s(`\\[])(docs/[A-Za-z0-9_./-]*[A-Za-z0-9_/])")

// TestDocLinksResolve checks that every relative link of README.md and
// docs/*.md, and every docs/… path they name, leads to a file of the
// repository, and that a link's #anchor is a heading of the file it names.
func TestDocLinksResolve(t *testing.T) {
	files := []string{"README.md"}
	md, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, md...)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(f string) map[string]bool {
		if a, ok := anchors[f]; ok {
			return a
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil
		}
		anchors[f] = headingAnchors(string(b))
		return anchors[f]
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			linked := map[string]bool{}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := f
				if file != "" {
					path = filepath.Join(filepath.Dir(f), file)
					linked[path] = true
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s:%d: link %s: no file %s", f, i+1, target, path)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", f, i+1, target, path, anchor)
				}
			}
			for _, m := range docsPath.FindAllStringSubmatch(line, -1) {
				if linked[m[1]] {
					continue // checked as a link
				}
				if _, err := os.Stat(m[1]); err != nil {
					t.Errorf("%s:%d: names %s, which is not in the repository", f, i+1, m[1])
				}
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text: lower case, punctuation dropped, spaces as hyphens, and
// -1, -2, … for repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# Architecture\n## The trust model\n```\n# not a heading\n```\n### `GET /api/events`\n## Notes\n## Notes\n## Where the ideas come from\n")
	for _, want := range []string{"architecture", "the-trust-model", "get-apievents", "notes", "notes-1", "where-the-ideas-come-from"} {
		if !got[want] {
			t.Errorf("no anchor #%s in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block became a heading")
	}
}
