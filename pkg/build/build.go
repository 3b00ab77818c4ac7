// Package build reports the version a govkit binary was built as.
package build

import (
	"runtime/debug"
	"sync"
)

// Version is set at link time:
//
//	go build -ldflags "-X github.com/govkit/govkit/pkg/build.Version=v1.2.3" ./cmd/...
//
// Code should call String, which falls back to the module's build
// information when Version is empty.
var Version = ""

// String returns the build version: the linker-injected Version, else the
// module version recorded by `go install module@version`, else the VCS
// revision the binary was built from (with a "-dirty" suffix for a modified
// tree), else "dev". The fallback is computed once, on first use, so that
// programs that never print their version never pay for it.
func String() string {
	if Version != "" {
		return Version
	}
	return fallback()
}

var fallback = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuildInfo(info)
})

func fromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision == "" {
		return "dev"
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if modified {
		revision += "-dirty"
	}
	return revision
}
