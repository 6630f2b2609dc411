package mcpserver

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/limits"
	"github.com/agentd/agentd/pkg/wire"
)

// schemaOf is the named tool's input schema as the server declares it.
func schemaOf(t *testing.T, name string) map[string]any {
	t.Helper()
	for _, tl := range (&tools{cfg: Config{Yes: true}}).list() {
		if tl.name != name {
			continue
		}
		s, _, err := inputSchema(tl.in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m, err := schemaMap(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// at follows a path of keys through a decoded schema.
func at(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	return v
}

func strs(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

// TestInputSchemasTakeTheContractsValues: the enums and limits of the
// input schemas are pkg/wire's and internal/limits', not copies.
func TestInputSchemasTakeTheContractsValues(t *testing.T) {
	if got := strs(at(schemaOf(t, "list"), "properties", "status", "items", "enum")); !slices.Equal(got, asStrings(wire.Statuses)) {
		t.Errorf("list status enum %v, want wire.Statuses %v", got, wire.Statuses)
	}
	if got := strs(at(schemaOf(t, "ask"), "properties", "via", "enum")); !slices.Equal(got, asStrings(wire.AskVias)) {
		t.Errorf("ask via enum %v, want wire.AskVias", got)
	}
	action := at(schemaOf(t, "act"), "properties", "actions", "items", "properties").(map[string]any)
	for _, k := range wire.ActionKinds {
		if !slices.Contains(strs(at(action, "kind", "enum")), string(k)) {
			t.Errorf("act kind enum lacks the contract's %s", k)
		}
	}
	if got := strs(at(action, "button", "enum")); !slices.Equal(got, asStrings(wire.Buttons)) {
		t.Errorf("button enum %v, want wire.Buttons", got)
	}
	if got := strs(at(action, "direction", "enum")); !slices.Equal(got, asStrings(wire.ScrollDirections)) {
		t.Errorf("direction enum %v, want wire.ScrollDirections", got)
	}
	if got := at(schemaOf(t, "act"), "properties", "actions", "maxItems"); got != float64(wire.MaxActions) {
		t.Errorf("act maxItems %v, want wire.MaxActions %d", got, wire.MaxActions)
	}
	if got := at(schemaOf(t, "wait"), "properties", "timeout_ms", "maximum"); got != float64(wire.MaxDurationMS) {
		t.Errorf("wait timeout_ms maximum %v, want wire.MaxDurationMS", got)
	}
	if got := at(schemaOf(t, "status"), "properties", "name", "pattern"); got != limits.NamePattern {
		t.Errorf("status name pattern %v, want limits.NamePattern", got)
	}
	if got := at(schemaOf(t, "desktop_new"), "properties", "wm", "enum"); !slices.Equal(strs(got), []string{wire.WMOpenbox, wire.WMNone}) {
		t.Errorf("desktop_new wm enum %v", got)
	}
}

// TestInputSchemasAreWhole: every tool of both servers has an input schema
// that resolves, is an object refusing other properties, lists its
// required arguments among its properties, describes every top-level
// argument, and has no shared-text name left unexpanded.
func TestInputSchemasAreWhole(t *testing.T) {
	all := (&tools{}).list()
	all = append(all, typedTool(tool{name: "reply"}, (&bridge{}).reply))
	for _, tl := range all {
		s, args, err := inputSchema(tl.in)
		if err != nil {
			t.Errorf("%s: %v", tl.name, err)
			continue
		}
		if _, err := s.Resolve(nil); err != nil {
			t.Errorf("%s: %v", tl.name, err)
		}
		m, _ := schemaMap(s)
		b, _ := json.Marshal(m)
		if m["type"] != "object" || m["additionalProperties"] != false {
			t.Errorf("%s: schema %s is not a closed object", tl.name, b)
		}
		if placeholder.Match(b) {
			t.Errorf("%s: schema %s keeps a {name} of a shared text", tl.name, b)
		}
		props := m["properties"].(map[string]any)
		if len(args) != len(props) {
			t.Errorf("%s: %d arguments, %d properties", tl.name, len(args), len(props))
		}
		for _, a := range args {
			p, _ := props[a.name].(map[string]any)
			if p == nil {
				t.Errorf("%s: argument %s is no property", tl.name, a.name)
			} else if d, _ := p["description"].(string); d == "" {
				t.Errorf("%s: argument %s has no description", tl.name, a.name)
			}
		}
		if strings.Contains(string(b), `"null"`) {
			t.Errorf("%s: schema %s takes null somewhere", tl.name, b)
		}
	}
}

// TestBadMCPTagsAreRefused: a tag the generator cannot read fails the
// server's start (addTools), naming the field, never a silent schema.
func TestBadMCPTagsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[struct {
			A int `json:"a" mcp:"maximum=wire.Nope"`
		}](), "not a number or a constant"},
		{reflect.TypeFor[struct {
			A int `json:"a" mcp:"most=3"`
		}](), `unknown keyword "most"`},
		{reflect.TypeFor[struct {
			A string `json:"a" mcp:"enum=colours"`
		}](), "not in vocabularies"},
		{reflect.TypeFor[struct {
			A string `json:"a" jsonschema:"see {nothing}"`
		}](), "{nothing}"},
	} {
		_, _, err := inputSchema(tc.typ)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.typ, err, tc.want)
		}
	}
}

// validValue is a value that fits schema s (decoded JSON).
func validValue(s map[string]any) any {
	if e, ok := s["enum"].([]any); ok {
		return e[0]
	}
	switch s["type"] {
	case "string":
		return "a"
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1.0
	case "boolean":
		return true
	case "array":
		n := 1.0
		if m, ok := s["minItems"].(float64); ok {
			n = max(n, m)
		}
		var out []any
		for range int(n) {
			out = append(out, validValue(s["items"].(map[string]any)))
		}
		return out
	case "object":
		return validObject(s)
	}
	return "a" // any JSON (push's message)
}

// validObject fills an object schema's required properties.
func validObject(s map[string]any) map[string]any {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	req, _ := s["required"].([]any)
	for _, r := range req {
		out[r.(string)] = validValue(props[r.(string)].(map[string]any))
	}
	return out
}

// violations are values breaking each limit s declares, by keyword.
func violations(s map[string]any) map[string]any {
	out := map[string]any{}
	if m, ok := s["minimum"].(float64); ok {
		out["minimum"] = m - 1
	}
	if m, ok := s["exclusiveMinimum"].(float64); ok {
		out["exclusiveMinimum"] = m
	}
	if m, ok := s["maximum"].(float64); ok {
		out["maximum"] = m + 1
	}
	if m, ok := s["minLength"].(float64); ok && m > 0 {
		out["minLength"] = strings.Repeat("a", int(m)-1)
	}
	if m, ok := s["maxLength"].(float64); ok {
		out["maxLength"] = strings.Repeat("a", int(m)+1)
	}
	if m, ok := s["minItems"].(float64); ok && m > 0 {
		out["minItems"] = []any{}
	}
	if m, ok := s["maxItems"].(float64); ok {
		var items []any
		for range int(m) + 1 {
			items = append(items, validValue(s["items"].(map[string]any)))
		}
		out["maxItems"] = items
	}
	if _, ok := s["enum"]; ok {
		out["enum"] = "not-one-of-them"
	}
	if _, ok := s["pattern"]; ok {
		out["pattern"] = "Not A Name!"
	}
	if n, ok := s["not"].(map[string]any); ok {
		out["not"] = n["const"]
	}
	return out
}

// TestEveryDeclaredLimitIsEnforced: for every limit every tool's input
// schema declares (on an argument, on an array's items, on the fields of
// act's actions), a call that breaks only that limit is refused by the
// check the server runs on each call, naming the argument.
func TestEveryDeclaredLimitIsEnforced(t *testing.T) {
	all := (&tools{cfg: Config{Yes: true}}).list()
	all = append(all, typedTool(tool{name: "reply"}, (&bridge{}).reply))
	checked := 0
	for _, tl := range all {
		tl, m, rs, err := tl.prepare()
		if err != nil {
			t.Fatal(err)
		}
		try := func(what string, args map[string]any) {
			t.Helper()
			raw, _ := json.Marshal(args)
			decoded := decodeArgs(t, raw)
			err := tl.checkLimits(rs, decoded)
			arg, _, _ := strings.Cut(what, " ")
			switch {
			case err == nil:
				t.Errorf("%s %s: accepted %s", tl.name, what, raw)
			case !strings.Contains(err.Error(), arg):
				t.Errorf("%s %s: refused with %q, which does not name %s", tl.name, what, err, arg)
			case tl.check.ok(decoded):
				t.Errorf("%s %s: the compiled check passes %s, which jsonschema-go refuses", tl.name, what, raw)
			}
			checked++
		}
		if raw, _ := json.Marshal(validObject(m)); tl.checkLimits(rs, decodeArgs(t, raw)) != nil || !tl.check.ok(decodeArgs(t, raw)) {
			t.Fatalf("%s: the valid call %s is refused: %v", tl.name, raw, tl.checkLimits(rs, decodeArgs(t, raw)))
		}
		for name, p := range m["properties"].(map[string]any) {
			ps := p.(map[string]any)
			for kw, bad := range violations(ps) {
				args := validObject(m)
				args[name] = bad
				try(name+" "+kw, args)
			}
			items, _ := ps["items"].(map[string]any)
			if items == nil {
				continue
			}
			for kw, bad := range violations(items) {
				args := validObject(m)
				args[name] = []any{bad}
				try(name+"[] "+kw, args)
			}
			fields, _ := items["properties"].(map[string]any)
			for field, f := range fields {
				for kw, bad := range violations(f.(map[string]any)) {
					item := validObject(items)
					item[field] = bad
					args := validObject(m)
					args[name] = []any{item}
					try(name+"[]."+field+" "+kw, args)
				}
			}
		}
	}
	t.Logf("%d limits checked", checked)
	if checked < 40 {
		t.Errorf("only %d limits checked; the walk misses the schemas", checked)
	}
}

// decodeArgs is raw decoded as a call's arguments are.
func decodeArgs(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCompiledCheckAgreesWithJSONSchema: for every tool, the compiled
// check (check.go) and jsonschema-go give the same verdict on a valid call,
// on each argument (and each field of an array's objects) replaced by a
// value of every JSON type, on every limit broken, and on an unknown
// argument: the fast check never passes what the schema refuses, nor
// refuses what it passes.
func TestCompiledCheckAgreesWithJSONSchema(t *testing.T) {
	all := (&tools{cfg: Config{Yes: true}}).list()
	all = append(all, typedTool(tool{name: "reply"}, (&bridge{}).reply))
	kinds := []any{"a", "Not A Name!", "", 1.5, 2.0, 0.0, -1.0, 1e9, true, nil, []any{}, []any{"shift"}, map[string]any{}}
	compared, refused := 0, 0
	for _, tl := range all {
		tl, m, rs, err := tl.prepare()
		if err != nil {
			t.Fatal(err)
		}
		same := func(args map[string]any) {
			t.Helper()
			raw, _ := json.Marshal(args)
			v := decodeArgs(t, raw)
			want := rs.Validate(v) == nil
			if got := tl.check.ok(v); got != want {
				t.Errorf("%s %s: compiled check says %v, jsonschema-go %v", tl.name, raw, got, want)
			}
			compared++
			if !want {
				refused++
			}
		}
		same(validObject(m))
		unknown := validObject(m)
		unknown["no_such_argument"] = 1.0
		same(unknown)
		for name, p := range m["properties"].(map[string]any) {
			ps := p.(map[string]any)
			var values []any
			values = append(values, kinds...)
			for _, bad := range violations(ps) {
				values = append(values, bad)
			}
			if items, _ := ps["items"].(map[string]any); items != nil {
				for _, k := range kinds {
					values = append(values, []any{k})
				}
				for _, bad := range violations(items) {
					values = append(values, []any{bad})
				}
				fields, _ := items["properties"].(map[string]any)
				for field, f := range fields {
					vals := append([]any{}, kinds...)
					for _, bad := range violations(f.(map[string]any)) {
						vals = append(vals, bad)
					}
					for _, v := range vals {
						item := validObject(items)
						item[field] = v
						values = append(values, []any{item})
					}
				}
			}
			for _, v := range values {
				args := validObject(m)
				args[name] = v
				same(args)
			}
		}
	}
	t.Logf("%d calls compared, %d refused", compared, refused)
	if compared < 500 || refused < compared/4 {
		t.Errorf("only %d calls compared (%d refused); the walk misses the schemas", compared, refused)
	}
}
