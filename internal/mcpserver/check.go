package mcpserver

// The check every tools/call runs against its tool's input schema, compiled
// once. jsonschema-go's validator is general (any draft, $ref, dynamic
// scopes, annotations) and walks by reflection with an error wrapped at
// every level: for act's 24 actions it cost about a quarter of the server's
// time per call. The input schemas are generated (schema.go) from a small
// set of keywords, so they compile to a direct walk over the decoded
// arguments. The compiled check only decides; a call it refuses is checked
// again by jsonschema-go, whose error names the argument and the limit
// (schemaProblem), and jsonschema-go has the last word. A schema with a
// keyword outside the set does not compile (addTools fails at start), and
// TestCompiledCheckAgreesWithJSONSchema holds the two to the same verdicts.

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"unicode/utf8"
)

// argCheck is one compiled (sub)schema.
type argCheck struct {
	types                                    []string // allowed JSON types; none: any
	enum                                     []any
	not                                      *any // not {const: v}
	minimum, maximum, exclMin, exclMax       *float64
	minLength, maxLength, minItems, maxItems int
	pattern                                  *regexp.Regexp
	props                                    map[string]*argCheck
	required                                 []string
	closed                                   bool      // additionalProperties false
	extra                                    *argCheck // additionalProperties as a schema
	items                                    *argCheck
}

// schemaNotes are keywords that describe and check nothing.
var schemaNotes = map[string]bool{"description": true, "title": true, "default": true, "examples": true, "$schema": true}

// compileSchema compiles a tool's input schema (schemaMap's form).
func compileSchema(s map[string]any) (*argCheck, error) {
	var decoded map[string]any
	b, err := json.Marshal(s)
	if err == nil {
		err = json.Unmarshal(b, &decoded)
	}
	if err != nil {
		return nil, err
	}
	return compileCheck(decoded)
}

// compileCheck compiles s, a schema as JSON decodes it.
func compileCheck(s map[string]any) (*argCheck, error) {
	c := &argCheck{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	num := func(k string, v any) (*float64, error) {
		f, ok := v.(float64)
		if !ok {
			return nil, fmt.Errorf("%s: %v is not a number", k, v)
		}
		return &f, nil
	}
	count := func(k string, v any) (int, error) {
		f, ok := v.(float64)
		if !ok || f < 0 || f != math.Trunc(f) {
			return 0, fmt.Errorf("%s: %v is not a count", k, v)
		}
		return int(f), nil
	}
	var err error
	for k, v := range s {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				c.types = []string{t}
			case []any:
				for _, e := range t {
					s, ok := e.(string)
					if !ok {
						return nil, fmt.Errorf("type: %v", v)
					}
					c.types = append(c.types, s)
				}
			default:
				return nil, fmt.Errorf("type: %v", v)
			}
		case "enum":
			e, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("enum: %v is not a list", v)
			}
			c.enum = e
		case "not":
			n, ok := v.(map[string]any)
			cv, isConst := n["const"]
			if !ok || len(n) != 1 || !isConst {
				return nil, fmt.Errorf("not: only not {const} compiles, not %v", v)
			}
			c.not = &cv
		case "minimum":
			c.minimum, err = num(k, v)
		case "maximum":
			c.maximum, err = num(k, v)
		case "exclusiveMinimum":
			c.exclMin, err = num(k, v)
		case "exclusiveMaximum":
			c.exclMax, err = num(k, v)
		case "minLength":
			c.minLength, err = count(k, v)
		case "maxLength":
			c.maxLength, err = count(k, v)
		case "minItems":
			c.minItems, err = count(k, v)
		case "maxItems":
			c.maxItems, err = count(k, v)
		case "pattern":
			p, _ := v.(string)
			c.pattern, err = regexp.Compile(p)
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("properties: %v", v)
			}
			c.props = map[string]*argCheck{}
			for name, p := range props {
				ps, ok := p.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("properties.%s: not a schema", name)
				}
				if c.props[name], err = compileCheck(ps); err != nil {
					return nil, fmt.Errorf("properties.%s: %w", name, err)
				}
			}
		case "required":
			r, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("required: %v", v)
			}
			for _, e := range r {
				name, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("required: %v", v)
				}
				c.required = append(c.required, name)
			}
		case "additionalProperties":
			switch a := v.(type) {
			case bool:
				c.closed = !a
			case map[string]any:
				if c.extra, err = compileCheck(a); err != nil {
					return nil, fmt.Errorf("additionalProperties: %w", err)
				}
			default:
				return nil, fmt.Errorf("additionalProperties: %v", v)
			}
		case "items":
			is, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("items: not a schema")
			}
			if c.items, err = compileCheck(is); err != nil {
				return nil, fmt.Errorf("items: %w", err)
			}
		default:
			if !schemaNotes[k] {
				return nil, fmt.Errorf("the keyword %q is not one the compiled check knows", k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ok reports whether v (decoded JSON: map[string]any, []any, string,
// float64, bool, nil) fits the schema.
func (c *argCheck) ok(v any) bool {
	if len(c.types) > 0 && !slices.ContainsFunc(c.types, func(t string) bool { return isJSONType(v, t) }) {
		return false
	}
	if c.enum != nil && !slices.ContainsFunc(c.enum, func(e any) bool { return jsonEqual(e, v) }) {
		return false
	}
	if c.not != nil && jsonEqual(*c.not, v) {
		return false
	}
	switch x := v.(type) {
	case float64:
		if (c.minimum != nil && x < *c.minimum) || (c.maximum != nil && x > *c.maximum) ||
			(c.exclMin != nil && x <= *c.exclMin) || (c.exclMax != nil && x >= *c.exclMax) {
			return false
		}
	case string:
		if c.minLength >= 0 || c.maxLength >= 0 {
			n := utf8.RuneCountInString(x)
			if n < c.minLength || (c.maxLength >= 0 && n > c.maxLength) {
				return false
			}
		}
		if c.pattern != nil && !c.pattern.MatchString(x) {
			return false
		}
	case []any:
		if len(x) < c.minItems || (c.maxItems >= 0 && len(x) > c.maxItems) {
			return false
		}
		if c.items != nil {
			for _, e := range x {
				if !c.items.ok(e) {
					return false
				}
			}
		}
	case map[string]any:
		for _, r := range c.required {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, e := range x {
			p := c.props[k]
			if p == nil {
				p = c.extra
			}
			if p == nil {
				if c.closed {
					return false
				}
				continue
			}
			if !p.ok(e) {
				return false
			}
		}
	}
	return true
}

// isJSONType is whether v is of JSON schema type t; an integer is a
// number whose value is whole.
func isJSONType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case float64:
		return t == "number" || (t == "integer" && x == math.Trunc(x) && !math.IsInf(x, 0))
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
}
