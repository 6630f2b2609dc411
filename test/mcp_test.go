package test

import (
	"encoding/json"
	"testing"
)

// mustJSON marshals v for a test's comparisons.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
