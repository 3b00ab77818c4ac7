package policy

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Infra is the inventory that gives resources their tags (seed 003
// "Resource Tags": HELPDESK_INFRA_CONFIG; govkit's --infra FILE). Policies
// match tags, so a resource missing here has none and usually falls to the
// default effect. The file is strict YAML, like a policy file:
//
//	version: "1"            # optional
//	resources:
//	  - type: database
//	    name: prod-db
//	    tags: [production, critical]
type Infra struct {
	Resources []InfraResource `json:"resources"`
	Source    string          `json:"-"`
	index     map[infraKey]int
}

// InfraResource is one resource of the inventory.
type InfraResource struct {
	Type string   `json:"type"`
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
	Line int      `json:"-"`
}

// infraKey is a lowercased (type, name): lookups are case-insensitive,
// like policy matching.
type infraKey struct{ typ, name string }

// LoadInfraFile loads an infra file, which must be a regular file
// (ReadFile).
func LoadInfraFile(path string) (*Infra, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return LoadInfraNamed(path, bytes.NewReader(data))
}

// LoadInfra loads an infra document from r ("<input>" in messages).
func LoadInfra(r io.Reader) (*Infra, error) { return LoadInfraNamed("", r) }

// LoadInfraNamed loads an infra document, naming it in messages. Unknown
// keys, a resource without type or name, and the same (type, name) twice
// are errors naming the line.
func LoadInfraNamed(name string, r io.Reader) (*Infra, error) {
	if name == "" {
		name = unnamedInput
	}
	root, err := readDocument(name, r, "infra")
	if err != nil {
		return nil, err
	}
	d := newDecoder(name)
	in := &Infra{Source: name, index: map[infraKey]int{}}
	d.mapping(root, "", []string{"version", "resources"}, func(key string, v *yaml.Node, field string) {
		switch key {
		case "version":
			if ver := d.str(v, field); ver != "1" {
				d.errorf(v.Line, field, "%s is not supported (want \"1\")", quote(ver))
			}
		case "resources":
			d.sequence(v, field, func(i int, item *yaml.Node, field string) {
				in.add(d, item, field)
			})
		}
	})
	if err := d.err(); err != nil {
		return nil, err
	}
	return in, nil
}

func (in *Infra) add(d *decoder, n *yaml.Node, field string) {
	res := InfraResource{}
	if p := d.peek(n); p != nil {
		res.Line = p.Line
	}
	d.mapping(n, field, []string{"type", "name", "tags"}, func(key string, v *yaml.Node, field string) {
		switch key {
		case "type":
			res.Type = d.str(v, field)
		case "name":
			res.Name = d.str(v, field)
		case "tags":
			res.Tags = d.strings(v, field)
			for i, t := range res.Tags {
				if strings.TrimSpace(t) == "" {
					d.errorf(v.Line, field+"["+strconv.Itoa(i)+"]", "empty tag")
				}
			}
		}
	})
	if strings.TrimSpace(res.Type) == "" {
		d.errorf(res.Line, field+".type", "required: the resource type (database, kubernetes, …)")
	}
	if strings.TrimSpace(res.Name) == "" {
		d.errorf(res.Line, field+".name", "required: the resource name")
	}
	key := infraKey{strings.ToLower(res.Type), strings.ToLower(res.Name)}
	if first, dup := in.index[key]; dup {
		d.errorf(res.Line, field, "duplicate resource %s:%s (first at line %d)", res.Type, res.Name, in.Resources[first].Line)
		return
	}
	in.index[key] = len(in.Resources)
	in.Resources = append(in.Resources, res)
}

// Lookup returns the tags of a resource and whether the inventory lists
// it, case-insensitively. A nil Infra lists nothing.
func (in *Infra) Lookup(typ, name string) (tags []string, found bool) {
	if in == nil {
		return nil, false
	}
	if in.index == nil {
		// Built in code rather than loaded: scan (no lazy index, so that
		// concurrent lookups stay free of data races).
		for _, r := range in.Resources {
			if strings.EqualFold(r.Type, typ) && strings.EqualFold(r.Name, name) {
				return r.Tags, true
			}
		}
		return nil, false
	}
	i, ok := in.index[infraKey{strings.ToLower(typ), strings.ToLower(name)}]
	if !ok {
		return nil, false
	}
	return in.Resources[i].Tags, true
}
