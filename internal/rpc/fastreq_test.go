package rpc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzFastRequestAgrees holds the shortcut to the strict decoder: whatever
// decodeRequestFast accepts, decodeRequestSlow decodes to the same request.
func FuzzFastRequestAgrees(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"agent.hello","params":{"version":1}}`,
		` { "params" : { "a" : [1, {"b": "}"}] } , "method":"x.y", "id": 18446744073709551615 } `,
		`{"id":7,"method":"a"}`, `{"id":7,"method":"a","params":{}}`, `{"id":01,"method":"a"}`,
		`{"id":1,"method":"a","params":{"x":"\"}"}}`, `{"id":1,"method":"a","params":{]}`,
		`{"id":1,"id":2,"method":"a"}`, `{"ID":1,"method":"a"}`, `{"id":1,"method":"a"}x`,
		`{"id":1.0,"method":"a"}`, `{"id":1e3,"method":"a"}`, `{"id":18446744073709551616,"method":"a"}`,
	} {
		f.Add([]byte(s))
	}
	// The committed corpus of FuzzDecodeRequest too.
	files, _ := filepath.Glob("testdata/fuzz/FuzzDecodeRequest/*")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		// Corpus files are "go test fuzz v1" then []byte("...") lines.
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if v, ok := strings.CutPrefix(line, "[]byte("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(v, ")")); err == nil {
					f.Add([]byte(s))
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := decodeRequestFast(body)
		if !ok {
			return
		}
		slow, err := decodeRequestSlow(body)
		if err != nil {
			t.Fatalf("body %q: the shortcut accepted it as %+v, the strict decoder refuses it: %v", body, *fast, err)
		}
		if fast.ID != slow.ID || fast.Method != slow.Method || !bytes.Equal(fast.Params, slow.Params) || (fast.Params == nil) != (slow.Params == nil) {
			t.Errorf("body %q: shortcut %+v, strict %+v", body, *fast, *slow)
		}
	})
}
