package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestLoadInfra(t *testing.T) {
	in, err := LoadInfraFile("testdata/infra.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if tags, ok := in.Lookup("database", "prod-db"); !ok || strings.Join(tags, ",") != "production,critical" {
		t.Errorf("prod-db: %v %v", tags, ok)
	}
	if tags, ok := in.Lookup("Database", "PROD-DB"); !ok || len(tags) != 2 {
		t.Errorf("case-insensitive lookup: %v %v", tags, ok)
	}
	if _, ok := in.Lookup("kubernetes", "prod-db"); ok {
		t.Error("type ignored")
	}
	if tags, ok := in.Lookup("database", "scratch-db"); !ok || len(tags) != 0 {
		t.Errorf("listed without tags: %v %v", tags, ok)
	}
	if _, ok := in.Lookup("database", "unknown-db"); ok {
		t.Error("unknown found")
	}
	var none *Infra
	if _, ok := none.Lookup("database", "prod-db"); ok {
		t.Error("nil infra found something")
	}
	hand := &Infra{Resources: []InfraResource{{Type: "database", Name: "a", Tags: []string{"x"}}}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, ok := hand.Lookup("DATABASE", "A"); !ok {
				t.Error("hand-built lookup")
			}
		})
	}
	wg.Wait()
}

func TestLoadInfraErrors(t *testing.T) {
	tests := []struct {
		doc, want string
	}{
		{"resources:\n  - {type: database, name: a, tag: [x]}\n", `infra.yaml:2: resources[0].tag: unknown key (want one of type, name, tags)`},
		{"resources:\n  - {type: database, name: a}\n  - {type: Database, name: A}\n", `infra.yaml:3: resources[1]: duplicate resource Database:A (first at line 2)`},
		{"resources:\n  - {type: database}\n", `infra.yaml:2: resources[0].name: required: the resource name`},
		{"resources:\n  - {name: a}\n", `infra.yaml:2: resources[0].type: required: the resource type (database, kubernetes, …)`},
		{"version: \"2\"\nresources: []\n", `infra.yaml:1: version: "2" is not supported (want "1")`},
		{"resources:\n  - {type: database, name: a, tags: production}\n", `infra.yaml:2: resources[0].tags: want a list, got a scalar`},
		{"db_servers: {}\n", `infra.yaml:1: db_servers: unknown key (want one of version, resources)`},
		{"", `infra.yaml:1: empty infra file`},
	}
	for _, tt := range tests {
		_, err := LoadInfraNamed("infra.yaml", strings.NewReader(tt.doc))
		if err == nil || strings.Split(err.Error(), "\n")[0] != tt.want {
			t.Errorf("%q:\n got %v\nwant %s", tt.doc, err, tt.want)
		}
	}
	if _, err := LoadInfraFile(filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if in, err := LoadInfra(strings.NewReader("resources: []\n")); err != nil || in.Source != unnamedInput {
		t.Errorf("empty inventory: %v", err)
	}
}
