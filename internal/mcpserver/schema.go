package mcpserver

// A tool's input schema is generated from its argument type, as its output
// schema is from its result type: jsonschema-go infers the shape (JSON
// types, properties, required = the fields without omitempty, no other
// properties), the jsonschema tag is an argument's description, and the mcp
// tag its limits, comma-separated:
//
//	minimum=N maximum=N exclusiveMinimum=N minLength=N maxLength=N
//	minItems=N maxItems=N pattern=NAME enum=NAME not=VALUE
//
// N is a number, or a constant named in tagNumbers (maximum=wire.MaxActions),
// so a limit the contract spells is never written twice. pattern names a
// tagPatterns entry, enum a vocabularies entry (for an array, enum is its
// items'). The contract's typed enumerations (wire.Status, wire.AskVia,
// wire.Button, wire.ScrollDirection) need no tag: their type carries the
// enum, from pkg/wire's lists. A description may include a shared text by
// name: {desktopIs}, or {sessionName} for an argument every tool of a kind shares. The server checks every call against the same schema
// (checkLimits), so what is declared is what is enforced.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentd/agentd/internal/limits"
	"github.com/agentd/agentd/pkg/wire"
)

// tagNumbers are the constants an mcp tag may name as a limit.
var tagNumbers = map[string]float64{
	"wire.MaxDurationMS": wire.MaxDurationMS,
	"wire.MaxActions":    wire.MaxActions,
	"wire.MaxLogEvents":  wire.MaxLogEvents,
	"maxWaitMS":          maxWaitMS,
}

// tagPatterns are the patterns an mcp tag may name.
var tagPatterns = map[string]string{
	"name":        limits.NamePattern,
	"desktopSize": `^[0-9]{3,4}x[0-9]{3,4}$`,
}

// vocabularies are the enumerations of the tools' own arguments, where the
// contract has no typed constants (its field is a plain string), by the
// name an mcp tag gives them.
var vocabularies = map[string][]string{
	// The signals a model may start a stop with; the daemon takes any.
	"signal": {"TERM", "INT", "HUP", "QUIT", "KILL"},
	// Modifier names and the aliases computer-use models write.
	"modifier":   {"ctrl", "alt", "shift", "super", "cmd", "meta", "win", "option"},
	"format":     {"jpeg", "png"},
	"wm":         {wire.WMOpenbox, wire.WMNone},
	"actionKind": actionKinds,
	// The states wait ends on: an agent CLI's, and any program's input.
	"waitState": {wire.StateWorking, wire.StateWaiting, wire.StateNeedsApproval, wire.StateNeedsAttention, string(wire.InputReady), string(wire.InputBusy)},
}

// descriptionTexts are the shared texts a description includes by name.
var descriptionTexts = strings.NewReplacer(
	"{sessionName}", "the session's name, as list shows it: lower-case letters, digits, '.', '_' and '-', at most 63 characters",
	"{target}", "the target: an agent desktop's name, or omit it for the user's own display. "+desktopIs,
	"{timeout}", "give up after this many milliseconds (default 600000); the refusal then carries what was seen",
	"{desktopIs}", desktopIs,
	"{logsDefaultLimit}", strconv.Itoa(logsDefaultLimit),
	"{waitBudgetS}", strconv.Itoa(waitBudgetMS/1000),
)

// contractEnums are the contract's typed enumerations, each with its
// values from pkg/wire.
var contractEnums = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[wire.Status]():          enumOf(wire.Statuses),
	reflect.TypeFor[wire.AskVia]():          enumOf(wire.AskVias),
	reflect.TypeFor[wire.Button]():          enumOf(wire.Buttons),
	reflect.TypeFor[wire.ScrollDirection](): enumOf(wire.ScrollDirections),
	// Any JSON value (push's message), not the bytes holding it.
	reflect.TypeFor[json.RawMessage](): {},
}

func enumOf[T ~string](values []T) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range asStrings(values) {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// placeholder finds a shared text's name left in a description.
var placeholder = regexp.MustCompile(`\{[A-Za-z]+\}`)

// inputSchema is the input schema of a tool whose arguments are a T (a
// struct), and its arguments in field order.
func inputSchema(t reflect.Type) (*jsonschema.Schema, []arg, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: contractEnums})
	if err != nil {
		return nil, nil, err
	}
	if err := applyTags(t, s); err != nil {
		return nil, nil, err
	}
	var args []arg
	for _, name := range s.PropertyOrder {
		args = append(args, arg{name: name, required: slices.Contains(s.Required, name)})
	}
	return s, args, nil
}

// applyTags walks schema s of Go type t: it applies each field's mcp tag
// and shared texts, and takes "null" out of the types jsonschema-go allows
// for pointers and slices (a tool's argument is given or left out; null is
// no value the tools take).
func applyTags(t reflect.Type, s *jsonschema.Schema) error {
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice && s.Items != nil:
		return applyTags(t.Elem(), s.Items)
	case t.Kind() != reflect.Struct || s.Properties == nil:
		return nil
	}
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous || !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := s.Properties[name]
		if p == nil {
			continue
		}
		if err := applyTags(f.Type, p); err != nil {
			return err
		}
		p.Description = descriptionTexts.Replace(p.Description)
		if left := placeholder.FindString(p.Description); left != "" {
			return fmt.Errorf("%s.%s: its description names %s, which is no shared text", t.Name(), f.Name, left)
		}
		if tag := f.Tag.Get("mcp"); tag != "" {
			if err := applyTag(p, tag); err != nil {
				return fmt.Errorf("%s.%s: mcp tag %q: %w", t.Name(), f.Name, tag, err)
			}
		}
	}
	return nil
}

// applyTag sets the limits one mcp tag gives a property.
func applyTag(p *jsonschema.Schema, tag string) error {
	for _, kv := range strings.Split(tag, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q is not keyword=value", kv)
		}
		bounds := map[string]**float64{"minimum": &p.Minimum, "maximum": &p.Maximum, "exclusiveMinimum": &p.ExclusiveMinimum}
		counts := map[string]**int{"minLength": &p.MinLength, "maxLength": &p.MaxLength, "minItems": &p.MinItems, "maxItems": &p.MaxItems}
		if dst, isBound := bounds[k]; isBound || counts[k] != nil {
			n, ok := tagNumbers[v]
			if !ok {
				var err error
				if n, err = strconv.ParseFloat(v, 64); err != nil {
					return fmt.Errorf("%s=%s: not a number or a constant of tagNumbers", k, v)
				}
			}
			if isBound {
				*dst = &n
			} else {
				i := int(n)
				*counts[k] = &i
			}
			continue
		}
		switch k {
		case "pattern":
			pat, ok := tagPatterns[v]
			if !ok {
				return fmt.Errorf("pattern %q is not in tagPatterns", v)
			}
			p.Pattern = pat
		case "enum":
			values, ok := vocabularies[v]
			if !ok {
				return fmt.Errorf("enum %q is not in vocabularies", v)
			}
			target := p
			if p.Items != nil {
				target = p.Items
			}
			target.Enum = nil
			for _, e := range values {
				target.Enum = append(target.Enum, e)
			}
		case "not":
			var c any = v
			p.Not = &jsonschema.Schema{Const: &c}
		default:
			return fmt.Errorf("unknown keyword %q", k)
		}
	}
	return nil
}

// schemaMap is s as the JSON object a tool declares: properties and
// required are present even when empty (some clients insist on them).
func schemaMap(s *jsonschema.Schema) (map[string]any, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	}
	if _, ok := m["required"]; !ok {
		m["required"] = []string{}
	}
	return m, nil
}
