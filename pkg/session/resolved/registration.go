// Package resolved is seed 000's ResolvedContext: the session-scoped,
// in-memory record of the resources an agent discovered, which strict
// resolution and routing validation consult (seed 000 §2 Invariants 1, 5, 7; §5).
package resolved

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds on a registration: tool results are untrusted input, and every
// field may end up in an error message or a metric label (DESIGN §3).
const (
	MaxFieldBytes = 256 // kind, provider_uid, name, host_uid, host_name, each alias and executor
	MaxAliases    = 32
	MaxExecutors  = 32
)

// Registration is one resource as a resolve tool reports it (seed 000 §5
// Resource Registration Interface, P-16), with the seed's Proxmox VMID and
// Node fields folded into the generic host scope. Name is optional: a
// resource without one is reachable by its canonical id and its aliases.
type Registration struct {
	Kind        string   `json:"kind"`
	ProviderUID string   `json:"provider_uid"`
	Name        string   `json:"name,omitempty"`
	Aliases     []string `json:"aliases,omitempty"`
	HostUID     string   `json:"host_uid,omitempty"`
	HostName    string   `json:"host_name,omitempty"`
	// Executors say how to reach the resource (the seed's
	// ExecutorRegistration, as opaque executor ids); the context keeps them
	// for the driver and never interprets them.
	Executors []string `json:"executors,omitempty"`
}

// FieldError is a registration rejected by Validate; Field is the json
// name, with an index for list entries ("aliases[3]").
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string {
	return "resolved: registration field " + e.Field + ": " + e.Problem
}

// host is the scope that goes into the canonical id: HostUID, else HostName.
func (r Registration) host() string {
	if r.HostUID != "" {
		return r.HostUID
	}
	return r.HostName
}

// Validate checks a registration before it enters a context. Kind and the
// id's host segment may not contain ':', so every canonical id splits back
// into its kind and host unambiguously; a provider_uid may (docker's
// "sha256:…").
func (r Registration) Validate() error {
	if r.Kind == "" {
		return &FieldError{"kind", "required"}
	}
	if r.ProviderUID == "" {
		return &FieldError{"provider_uid", "required"}
	}
	for _, f := range [...]struct{ name, v string }{
		{"kind", r.Kind}, {"provider_uid", r.ProviderUID}, {"name", r.Name},
		{"host_uid", r.HostUID}, {"host_name", r.HostName},
	} {
		if p := fieldProblem(f.v); p != "" {
			return &FieldError{f.name, p}
		}
	}
	if strings.IndexByte(r.Kind, ':') >= 0 {
		return &FieldError{"kind", "contains ':'"}
	}
	if r.HostUID != "" && strings.IndexByte(r.HostUID, ':') >= 0 {
		return &FieldError{"host_uid", "contains ':'"}
	}
	if r.HostUID == "" && strings.IndexByte(r.HostName, ':') >= 0 {
		return &FieldError{"host_name", "contains ':' (and there is no host_uid)"}
	}
	if err := listProblem("aliases", r.Aliases, MaxAliases); err != nil {
		return err
	}
	return listProblem("executors", r.Executors, MaxExecutors)
}

func listProblem(field string, list []string, limit int) error {
	if len(list) > limit {
		return &FieldError{field, "more than " + strconv.Itoa(limit) + " entries"}
	}
	for i, v := range list {
		p := fieldProblem(v)
		if v == "" {
			p = "empty"
		}
		if p != "" {
			return &FieldError{field + "[" + strconv.Itoa(i) + "]", p}
		}
	}
	return nil
}

// fieldProblem bounds a field and keeps it printable: ids and names are
// echoed in error messages and metric labels.
func fieldProblem(v string) string {
	if len(v) > MaxFieldBytes {
		return "longer than " + strconv.Itoa(MaxFieldBytes) + " bytes"
	}
	ascii := true
	for i := 0; i < len(v); i++ {
		switch b := v[i]; {
		case b < 0x20 || b == 0x7f:
			return "contains a control character"
		case b >= utf8.RuneSelf:
			ascii = false
		}
	}
	if !ascii && !utf8.ValidString(v) {
		return "not valid UTF-8"
	}
	return ""
}

// CanonicalID is seed 000 Invariant 7's resource id: "{kind}:{host}:{provider_uid}"
// for a resource scoped to a host (lxc:delly:141), "{kind}:{provider_uid}"
// for a global one (node:delly). P-15.
func CanonicalID(r Registration) string {
	var buf [3*MaxFieldBytes + 2]byte
	return string(appendID(buf[:0], r))
}

func appendID(b []byte, r Registration) []byte {
	b = append(b, r.Kind...)
	b = append(b, ':')
	if h := r.host(); h != "" {
		b = append(b, h...)
		b = append(b, ':')
	}
	return append(b, r.ProviderUID...)
}
