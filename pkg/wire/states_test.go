package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// TestEnumListsHoldEveryConstant: each list of a typed enumeration
// (Statuses, AskVias, ...) holds exactly the constants states.go declares
// of its type, so a surface generated from a list (the MCP
// schemas' enums, completions) offers a new value at once.
func TestEnumListsHoldEveryConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "states.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string][]string{} // type name -> values in order
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			id, ok := vs.Type.(*ast.Ident)
			if !ok || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok {
				continue
			}
			v, _ := strconv.Unquote(lit.Value)
			declared[id.Name] = append(declared[id.Name], v)
		}
	}
	for _, tc := range []struct {
		typ  string
		list []string
	}{
		{"Status", asStrings(Statuses)},
		{"Termination", asStrings(Terminations)},
		{"EventType", asStrings(EventTypes)},
		{"ActionKind", asStrings(ActionKinds)},
		{"AskVia", asStrings(AskVias)},
		{"Button", asStrings(Buttons)},
		{"ScrollDirection", asStrings(ScrollDirections)},
	} {
		want := declared[tc.typ]
		if len(want) == 0 {
			t.Errorf("states.go declares no %s constants", tc.typ)
			continue
		}
		got, sortedWant := slices.Sorted(slices.Values(tc.list)), slices.Sorted(slices.Values(want))
		if !slices.Equal(got, sortedWant) {
			t.Errorf("the list of %s holds %v, want the declared %v", tc.typ, tc.list, want)
		}
	}
}

func asStrings[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
