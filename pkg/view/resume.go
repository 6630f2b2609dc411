package view

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// A page left open over a restart of agentd reconnects by itself, without
// a cookie ever outliving the view that handed it out. Browsers send
// 127.0.0.1's cookies to every port, so a cookie the next agentd took
// would be given to whoever held the port while agentd restarted. Instead
// each page holds a resume key in its script's memory (from /resume-key,
// which needs the cookie), and the server keeps the keys in
// Options.StateFile (0600) with its port. After a restart the view listens
// on the same port again and knows the keys, not the cookies. The page,
// its cookie refused, first makes the server prove it knows the page's key
// (/prove: an HMAC of a nonce the page chose, sent without credentials),
// and only then hands the key over (/resume), which spends it for a new
// cookie and a new key. A program squatting on the port meanwhile learns
// an old cookie nobody takes and never sees a key.
//
// The file lives only as long as the view would: the server removes it
// when it stops for idleness, and a file saved longer ago than the idle
// time is not resumed. If the port is taken when agentd starts again, the
// view listens elsewhere, takes no keys, and its pages say to run
// agentctl view again.

// proveLabel prefixes the nonce a server's proof is an HMAC of, so the
// key signs nothing else.
const proveLabel = "agentd-view-prove:"

// maxResumeBody bounds /resume's JSON body.
const maxResumeBody = 1024

// resumeKey is one page's resume key, as the guard keeps it.
type resumeKey struct {
	key [32]byte
	at  time.Time // issued
}

// savedView is the state file's content.
type savedView struct {
	Port int `json:"port"`
	// Keys are the pages' resume keys by id, base64url, with when each
	// was issued.
	Keys map[string]savedKey `json:"keys"`
	// SavedAt is when the file was last written.
	SavedAt time.Time `json:"saved_at"`
}

type savedKey struct {
	Key string    `json:"key"`
	At  time.Time `json:"at"`
}

// loadSaved reads the state file; it returns nil when there is none or
// it is too old to resume (saved longer ago than idle).
func loadSaved(path string, idle time.Duration, now time.Time) (*savedView, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sv savedView
	if err := json.Unmarshal(b, &sv); err != nil {
		return nil, fmt.Errorf("view state %s is not valid JSON (%v): not resumed", path, err)
	}
	if sv.Port <= 0 || sv.Port > 65535 || now.Sub(sv.SavedAt) > idle {
		return nil, nil
	}
	return &sv, nil
}

// listenResumed listens on the saved port if there is one and it is
// free, else on a port the kernel picks. It reports whether the saved
// port was had.
func listenResumed(sv *savedView) (net.Listener, bool, error) {
	if sv != nil {
		ln, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(sv.Port))
		if err == nil {
			return ln, true, nil
		}
	}
	// tcp4 and the literal address: never another interface, never ::.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	return ln, false, err
}

// restoreKeys gives the guard the saved resume keys.
func (g *guard) restoreKeys(sv *savedView) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, k := range sv.Keys {
		b, err := base64.RawURLEncoding.DecodeString(k.Key)
		if err != nil || len(b) != 32 || keyID([32]byte(b)) != id {
			continue
		}
		g.keys[id] = resumeKey{key: [32]byte(b), at: k.At}
	}
	evictOldest(g.keys, maxCookies, keyIssued)
}

// keyIssued is when a resume key was issued.
func keyIssued(k resumeKey) time.Time { return k.at }

// keyID names a resume key without giving it away.
func keyID(k [32]byte) string {
	h := sha256.Sum256(k[:])
	return hex.EncodeToString(h[:16])
}

// newResumeKey makes a page's resume key.
func (g *guard) newResumeKey() (id, key string) {
	var k [32]byte
	rand.Read(k[:])
	id = keyID(k)
	g.mu.Lock()
	defer g.mu.Unlock()
	evictOldest(g.keys, maxCookies-1, keyIssued)
	g.keys[id] = resumeKey{key: k, at: g.now()}
	return id, base64.RawURLEncoding.EncodeToString(k[:])
}

// prove is the server's proof that it knows key id: the HMAC of the
// page's nonce under it.
func (g *guard) prove(id, nonce string) ([]byte, bool) {
	g.mu.Lock()
	k, ok := g.keys[id]
	g.mu.Unlock()
	if !ok {
		return nil, false
	}
	m := hmac.New(sha256.New, k.key[:])
	m.Write([]byte(proveLabel + nonce))
	return m.Sum(nil), true
}

// redeem spends key id for a new cookie; "" when the key is not that id's.
func (g *guard) redeem(id, key string) string {
	b, err := base64.RawURLEncoding.DecodeString(key)
	g.mu.Lock()
	defer g.mu.Unlock()
	k, ok := g.keys[id]
	if !ok || err != nil || len(b) != 32 || subtle.ConstantTimeCompare(b, k.key[:]) != 1 {
		return ""
	}
	delete(g.keys, id)
	return g.newCookieLocked()
}

// savedKeys is the guard's resume keys as the state file keeps them.
func (g *guard) savedKeys() map[string]savedKey {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := make(map[string]savedKey, len(g.keys))
	for id, k := range g.keys {
		m[id] = savedKey{Key: base64.RawURLEncoding.EncodeToString(k.key[:]), At: k.at}
	}
	return m
}

// resumeRoutes adds the routes a page resumes through.
func (s *Server) resumeRoutes(mux *http.ServeMux) {
	mux.Handle("GET /resume-key", s.authed(http.HandlerFunc(s.resumeKey)))
	mux.HandleFunc("GET /prove", s.proveKey)
	mux.HandleFunc("POST /resume", s.resume)
}

// resumeKey gives a page a resume key (it needs the page's cookie).
func (s *Server) resumeKey(w http.ResponseWriter, _ *http.Request) {
	id, key := s.guard.newResumeKey()
	s.saveState()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]string{"id": id, "key": key})
}

// proveKey answers a page's challenge: the HMAC of its nonce under the
// key it names. It needs no pass (the page sends none to a server it has
// not checked), and tells nothing of the key.
func (s *Server) proveKey(w http.ResponseWriter, r *http.Request) {
	id, nonce := r.URL.Query().Get("id"), r.URL.Query().Get("n")
	if len(nonce) < 16 || len(nonce) > 128 {
		http.Error(w, "prove takes a nonce of 16 to 128 characters (n)", http.StatusBadRequest)
		return
	}
	mac, ok := s.guard.prove(id, nonce)
	if !ok {
		s.badPass(w, r, http.StatusNotFound, "no such resume key here: run agentctl view again")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]string{"mac": base64.RawURLEncoding.EncodeToString(mac)})
}

// resume spends a page's resume key for a new cookie, from the page's own
// origin only.
func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); !originAllowed(origin, r.Host) {
		http.Error(w, "resume from another origin refused", http.StatusForbidden)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "resume takes a JSON body (Content-Type: application/json)", http.StatusUnsupportedMediaType)
		return
	}
	var req struct{ ID, Key string }
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxResumeBody)).Decode(&req); err != nil {
		http.Error(w, "resume's body: "+err.Error(), http.StatusBadRequest)
		return
	}
	c := s.guard.redeem(req.ID, req.Key)
	if c == "" {
		s.badPass(w, r, http.StatusForbidden, "this page's resume key is not valid here: run agentctl view again")
		return
	}
	s.saveState()
	s.log.Info().Str("remote", r.RemoteAddr).Msg("view: a page open over a restart of agentd reconnected")
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: c, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// saveState writes the state file (0600, replaced whole), when the server
// has one. Failing to write it costs only the reconnect after a restart.
func (s *Server) saveState() {
	path := s.opts.StateFile
	if path == "" {
		return
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if s.dropped {
		return // stopped for idleness: nothing is to be resumed
	}
	b, _ := json.Marshal(savedView{Port: s.port, Keys: s.guard.savedKeys(), SavedAt: time.Now()})
	tmp, err := os.CreateTemp(filepath.Dir(path), ".view-*.json")
	if err == nil {
		_, err = tmp.Write(b)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	}
	if err != nil {
		s.log.Warn().Err(err).Str("file", path).Msg("view state not saved: open pages will not reconnect after a restart of agentd")
	}
}

// dropState removes the state file: the view stopped for good.
func (s *Server) dropState() {
	if s.opts.StateFile != "" {
		s.saveMu.Lock()
		defer s.saveMu.Unlock()
		s.dropped = true
		os.Remove(s.opts.StateFile)
	}
}
