package capture

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestKindsAreEverySentinel holds Kinds to the sentinels errors.go
// declares, so the daemon's table test (which ranges over Kinds) sees a
// new one.
func TestKindsAreEverySentinel(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for _, name := range vs.Names {
				if len(name.Name) > 3 && name.Name[:3] == "Err" {
					declared[name.Name] = true
				}
			}
		}
		return true
	})
	kinds := Kinds()
	if len(kinds) != len(declared) {
		t.Errorf("Kinds() has %d sentinels, errors.go declares %d: %v", len(kinds), len(declared), declared)
	}
	seen := map[error]bool{}
	for _, k := range kinds {
		if seen[k] {
			t.Errorf("Kinds() lists %v twice", k)
		}
		seen[k] = true
		if !errors.Is(k, k) {
			t.Errorf("%v is not a sentinel", k)
		}
	}
}
