package view

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// viewGet asks path of s, with cookie c when given.
func viewGet(t *testing.T, s *Server, path string, c *http.Cookie) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", s.Port(), path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		req.AddCookie(c)
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// resumeKeyOf asks s for a resume key with cookie c.
func resumeKeyOf(t *testing.T, s *Server, c *http.Cookie) (id, key string) {
	t.Helper()
	res := viewGet(t, s, "/resume-key", c)
	defer res.Body.Close()
	var k struct{ ID, Key string }
	if err := json.NewDecoder(res.Body).Decode(&k); err != nil || res.StatusCode != http.StatusOK || k.ID == "" {
		t.Fatalf("/resume-key: %s, %+v, %v", res.Status, k, err)
	}
	return k.ID, k.Key
}

// postResume sends /resume with the page's Origin.
func postResume(t *testing.T, s *Server, id, key string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"id": id, "key": key})
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/resume", s.Port()), strings.NewReader(string(body)))
	req.Header.Set("Origin", fmt.Sprintf("http://127.0.0.1:%d", s.Port()))
	req.Header.Set("Content-Type", "application/json")
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// TestViewResumesOverARestart: a server started from the state file a
// closed one left listens on the same port, refuses the old cookie, proves
// it knows the page's resume key and trades the key, once, for a new
// cookie. The file holds no cookie and is 0600.
func TestViewResumesOverARestart(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "view.json")
	s1 := start(t, &fakeSessions{}, Options{StateFile: state})
	c := login(t, s1)
	id, key := resumeKeyOf(t, s1, c)
	port := s1.Port()
	s1.Close()
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatalf("no state file after Close: %v", err)
	}
	if strings.Contains(string(b), c.Value) {
		t.Errorf("the state file holds the cookie: %s", b)
	}
	if st, _ := os.Stat(state); st.Mode().Perm() != 0o600 {
		t.Errorf("the state file is %v, want 0600", st.Mode().Perm())
	}

	s2 := start(t, &fakeSessions{}, Options{StateFile: state})
	if s2.Port() != port {
		t.Fatalf("resumed on port %d, want %d", s2.Port(), port)
	}
	if res := viewGet(t, s2, "/check", c); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old cookie after the restart: %s, want 401 (a cookie never outlives its view)", res.Status)
	}
	// The proof: HMAC-SHA256 of the label and the page's nonce.
	nonce := "0123456789abcdefghij"
	res := viewGet(t, s2, "/prove?id="+id+"&n="+nonce, nil)
	var p struct{ MAC string }
	json.NewDecoder(res.Body).Decode(&p)
	res.Body.Close()
	raw, _ := base64.RawURLEncoding.DecodeString(key)
	m := hmac.New(sha256.New, raw)
	m.Write([]byte(proveLabel + nonce))
	if got, _ := base64.RawURLEncoding.DecodeString(p.MAC); !hmac.Equal(got, m.Sum(nil)) {
		t.Errorf("/prove: %s %q, not the HMAC of the nonce under the page's key", res.Status, p.MAC)
	}
	if res := viewGet(t, s2, "/prove?id=nosuch&n="+nonce, nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("/prove of an unknown key: %s, want 404", res.Status)
	}
	if res := postResume(t, s2, id, base64.RawURLEncoding.EncodeToString(make([]byte, 32))); res.StatusCode != http.StatusForbidden {
		t.Errorf("/resume with a wrong key: %s, want 403", res.Status)
	}
	res = postResume(t, s2, id, key)
	var fresh *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == cookieName {
			fresh = ck
		}
	}
	if res.StatusCode != http.StatusNoContent || fresh == nil || fresh.Value == c.Value || !fresh.HttpOnly {
		t.Fatalf("/resume with the key: %s, cookie %+v", res.Status, fresh)
	}
	if res := viewGet(t, s2, "/check", fresh); res.StatusCode != http.StatusNoContent {
		t.Errorf("the resumed cookie: %s, want 204", res.Status)
	}
	if res := postResume(t, s2, id, key); res.StatusCode != http.StatusForbidden {
		t.Errorf("the key spent twice: %s, want 403", res.Status)
	}
	// From another origin: refused whatever the key.
	id2, key2 := resumeKeyOf(t, s2, fresh)
	body, _ := json.Marshal(map[string]string{"id": id2, "key": key2})
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/resume", s2.Port()), strings.NewReader(string(body)))
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Content-Type", "application/json")
	if res, err := noRedirect.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("/resume from another origin: %v %v, want 403", res.Status, err)
	}
}

// TestViewResumeRefusesStaleOrTakenState: a state file older than the
// idle time or not JSON is not resumed; one naming a port another program
// took meanwhile gives a view elsewhere that knows no key; an idle stop
// removes the file.
func TestViewResumeRefusesStaleOrTakenState(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "view.json")
	s1 := start(t, &fakeSessions{}, Options{StateFile: state})
	id, _ := resumeKeyOf(t, s1, login(t, s1))
	port := s1.Port()
	s1.Close()

	ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	s2 := start(t, &fakeSessions{}, Options{StateFile: state})
	ln.Close()
	if s2.Port() == port {
		t.Fatal("listening on a port another program holds")
	}
	if res := viewGet(t, s2, "/prove?id="+id+"&n=0123456789abcdefghij", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("a view on a new port proves an old key: %s", res.Status)
	}
	s2.Close()

	old := fmt.Sprintf(`{"port":%d,"keys":{},"saved_at":%q}`, port, time.Now().Add(-2*time.Hour).Format(time.RFC3339))
	os.WriteFile(state, []byte(old), 0o600)
	if sv, err := loadSaved(state, time.Hour, time.Now()); sv != nil || err != nil {
		t.Errorf("a state file saved 2 h ago with a 1 h idle time: %+v, %v; want nothing to resume", sv, err)
	}
	os.WriteFile(state, []byte("not json"), 0o600)
	if sv, err := loadSaved(state, time.Hour, time.Now()); sv != nil || err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("a state file that is not JSON: %+v, %v", sv, err)
	}

	s3 := start(t, &fakeSessions{}, Options{StateFile: state, Idle: 50 * time.Millisecond})
	select {
	case <-s3.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the view did not stop after its idle time")
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("the state file after an idle stop: %v, want it removed", err)
	}
}
