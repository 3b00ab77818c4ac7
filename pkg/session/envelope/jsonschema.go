package envelope

import (
	_ "embed"
	"encoding/json"
)

// The JSON Schemas of the reply formats, for a runtime to hand its provider
// as a structured-output format (seed 002 LM Studio Structured Output:
// "the schema enforces the { tool, args, nonce } envelope"; G-31). Parse
// stays the authority: a provider's schema support is best effort.
var (
	//go:embed tool_call.schema.json
	toolCallSchema []byte
	//go:embed decision.schema.json
	decisionSchema []byte
)

// ToolCallSchemaJSON is the JSON Schema of the tool-call envelope, for any
// session. A copy: the caller may keep or change it.
func ToolCallSchemaJSON() []byte { return append([]byte(nil), toolCallSchema...) }

// DecisionSchemaJSON is the JSON Schema of decision JSON, for any session.
func DecisionSchemaJSON() []byte { return append([]byte(nil), decisionSchema...) }

// ToolCallSchema is the envelope's JSON Schema for this registry and turn:
// one alternative per tool with its args (types, enums, required keys,
// additionalProperties false, as seed 002's buildToolCallResponseFormat
// does) and, when nonce is set, the nonce as a constant. Deterministic.
func (s *Schema) ToolCallSchema(nonce string) []byte {
	return s.jsonSchema(nonce, false)
}

// DecisionSchema is decision JSON's schema for this registry and turn.
func (s *Schema) DecisionSchema(nonce string) []byte {
	return s.jsonSchema(nonce, true)
}

type object = map[string]any

func (s *Schema) jsonSchema(nonce string, decision bool) []byte {
	nonceSchema := object{"type": "string", "minLength": 1}
	if nonce != "" {
		nonceSchema = object{"const": nonce}
	}
	var alts []any
	for _, name := range s.Names() {
		props := object{"tool": object{"const": name}, "args": s.tools[name].jsonSchema(), "nonce": nonceSchema}
		required := []string{"tool", "args", "nonce"}
		if decision {
			props["action"] = object{"const": "tool"}
			required = append([]string{"action"}, required...)
		}
		alts = append(alts, object{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	}
	if decision {
		alts = append(alts, object{"type": "object", "properties": object{"action": object{"const": "final"}, "nonce": nonceSchema},
			"required": []string{"action", "nonce"}, "additionalProperties": false})
	}
	title := "govkit tool-call envelope (seed 002)"
	if decision {
		title = "govkit decision JSON (seed 002)"
	}
	doc := object{"$schema": "https://json-schema.org/draft/2020-12/schema", "title": title}
	switch len(alts) {
	case 0:
		doc["not"] = object{} // no tool registered: no envelope is valid
	case 1:
		for k, v := range alts[0].(object) {
			doc[k] = v
		}
	default:
		doc["oneOf"] = alts
	}
	b, err := json.Marshal(doc) // maps marshal with sorted keys
	if err != nil {
		panic("envelope: schema does not marshal: " + err.Error()) // only plain maps, strings and slices
	}
	return b
}

func (t *toolSpec) jsonSchema() object {
	if !t.checked {
		return object{"type": "object"}
	}
	props := object{}
	for k, a := range t.args {
		props[k] = a.jsonSchema()
	}
	out := object{"type": "object", "properties": props, "additionalProperties": false}
	if len(t.required) > 0 {
		out["required"] = t.required
	}
	return out
}

func (a ArgSpec) jsonSchema() object {
	var out object
	switch a.Type {
	case TypeString:
		out = object{"type": "string"}
		if a.Enum != nil {
			out["enum"] = a.Enum
		}
	case TypeInt:
		out = object{"type": "integer"}
	case TypeNumber:
		out = object{"type": "number"}
	case TypeBool:
		out = object{"type": "boolean"}
	case TypeStringArray:
		items := object{"type": "string"}
		if a.Enum != nil {
			items["enum"] = a.Enum
		}
		out = object{"type": "array", "items": items}
	}
	return out
}
