package view

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The guard's bounds.
const (
	// freeFailures is how many bad tokens or cookies a client may present
	// before it is blocked: enough for a mistyped or stale URL, far too few
	// to guess 256 bits.
	freeFailures = 5
	// firstBlock is the first block after the free failures; each further
	// failure doubles it, up to maxBlock.
	firstBlock = time.Second
	maxBlock   = 5 * time.Minute
	// tokenTTL is how long a one-time token may wait to be traded for a
	// cookie: long enough for a browser to start, short enough that a URL
	// left in a terminal's scrollback is soon worthless.
	tokenTTL = 2 * time.Minute
	// maxPendingTokens bounds the tokens waiting to be traded; the oldest
	// goes first.
	maxPendingTokens = 16
	// maxCookies bounds the cookies handed out by one server; the oldest
	// goes first (its page then asks for agentctl view again).
	maxCookies = 64
	// tarpitMax is the longest a bad pass's answer is held during a
	// block, and tarpitSlots how many are held at once.
	tarpitMax   = time.Second
	tarpitSlots = 8
)

// cookieName is the view's cookie.
const cookieName = "agentd_view"

// guard holds the one-time tokens, the cookies they were traded for, and
// each client's failures. Secrets are kept as their SHA-256, so the map
// lookup does not compare secret bytes.
type guard struct {
	mu       sync.Mutex
	tokens   map[[32]byte]time.Time // pending token → expiry
	cookies  map[[32]byte]time.Time // cookie → issued
	keys     map[string]resumeKey   // the pages' resume keys by id (resume.go)
	failures map[string]*failures   // client address → its record
	now      func() time.Time
	// slots are the answers held in the tarpit, up to tarpitMax each.
	slots     chan struct{}
	tarpitMax time.Duration
}

// failures is one client's record of bad tokens and cookies.
type failures struct {
	n     int
	until time.Time // blocked until
}

func newGuard() *guard {
	return &guard{tokens: map[[32]byte]time.Time{}, cookies: map[[32]byte]time.Time{}, keys: map[string]resumeKey{},
		failures: map[string]*failures{}, now: time.Now, slots: make(chan struct{}, tarpitSlots), tarpitMax: tarpitMax}
}

// secret returns 256 random bits, URL-safe.
func secret() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hash(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// newToken makes a one-time token.
func (g *guard) newToken() string {
	t := secret()
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for h, exp := range g.tokens {
		if now.After(exp) {
			delete(g.tokens, h)
		}
	}
	evictOldest(g.tokens, maxPendingTokens-1, issued)
	g.tokens[hash(t)] = now.Add(tokenTTL)
	return t
}

// evictOldest removes the entries with the smallest times (at) until m
// has at most keep.
func evictOldest[K comparable, V any](m map[K]V, keep int, at func(V) time.Time) {
	for len(m) > keep {
		var oldest K
		var when time.Time
		first := true
		for k, v := range m {
			if t := at(v); first || t.Before(when) {
				oldest, when, first = k, t, false
			}
		}
		delete(m, oldest)
	}
}

// issued is an entry's time in a map of times.
func issued(t time.Time) time.Time { return t }

// trade spends token and returns a new cookie, or "" when the token is
// not a pending one.
func (g *guard) trade(token string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := hash(token)
	exp, ok := g.tokens[h]
	if !ok {
		return ""
	}
	delete(g.tokens, h)
	if g.now().After(exp) {
		return ""
	}
	return g.newCookieLocked()
}

// newCookieLocked hands out a new cookie, the oldest going past
// maxCookies (g.mu held).
func (g *guard) newCookieLocked() string {
	c := secret()
	evictOldest(g.cookies, maxCookies-1, issued)
	g.cookies[hash(c)] = g.now()
	return c
}

// validCookie says whether c is a cookie this server handed out.
func (g *guard) validCookie(c string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.cookies[hash(c)]
	return ok
}

// fail records a bad token or cookie from client: past the free ones each
// blocks the client, twice as long as the one before. It returns the block
// now in force (zero while failures are free) and whether this failure
// started it.
func (g *guard) fail(client string) (block time.Duration, started bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.failures[client]
	if f == nil {
		if len(g.failures) >= 1024 { // one entry per address: loopback has few
			clear(g.failures)
		}
		f = &failures{}
		g.failures[client] = f
	}
	f.n++
	if f.n <= freeFailures {
		return 0, false
	}
	now := g.now()
	started = !f.until.After(now)
	block = min(firstBlock<<min(f.n-freeFailures-1, 20), maxBlock)
	f.until = now.Add(block)
	return block, started
}

// tarpit holds a bad pass's answer during a block: for what is left of it,
// at most tarpitMax, and for at most tarpitSlots answers at once (the rest
// are answered at once), or until ctx ends.
func (g *guard) tarpit(ctx context.Context, block time.Duration) {
	select {
	case g.slots <- struct{}{}:
		defer func() { <-g.slots }()
	default:
		return
	}
	t := time.NewTimer(min(block, g.tarpitMax))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// clientOf is the key failures are counted by: the peer's address without
// its port.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// hostAllowed says whether a request's Host names this server as the page
// knows it: 127.0.0.1:PORT or localhost:PORT exactly. Anything else is a
// name that resolves here only by rebinding (or a proxy's doing).
func hostAllowed(host string, port int) bool {
	p := ":" + strconv.Itoa(port)
	return host == "127.0.0.1"+p || host == "localhost"+p
}

// originAllowed says whether a WebSocket's Origin is the page's own: the
// scheme and the exact Host the request came to.
func originAllowed(origin, host string) bool {
	return origin == "http://"+host
}
