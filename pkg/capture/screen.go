package capture

import (
	"context"
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/BurntSushi/xgb"
	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
)

// Options configure a Screen.
type Options struct {
	// Display is the X display, usually os.Getenv("DISPLAY"). Empty means
	// there is none: every method returns ErrUnavailable.
	Display string
	// AllowAct enables Act; it is off by default (consent). SetAllowAct
	// changes it at runtime.
	AllowAct bool
	// AuditPath is the JSONL audit log, e.g.
	// $XDG_STATE_HOME/agentd/audit.jsonl. Empty disables auditing (tests
	// only: the daemon must always set it).
	AuditPath string
	// AuditMaxBytes caps the audit log; over it the file is renamed to
	// AuditPath+".1" (replacing the older one) and a new one started.
	// Zero means DefaultAuditMaxBytes.
	AuditMaxBytes int64
	// RecordScreen keeps every act batch's observation beside the audit
	// log (in screen/ next to AuditPath) for WriteRecord;
	// SetRecordScreen changes it. RecordScreenMaxBytes caps the kept
	// images, oldest dropped first; zero means DefaultRecordScreenMaxBytes.
	RecordScreen         bool
	RecordScreenMaxBytes int64
	// Logger receives the package's logs; the zero Logger discards them.
	Logger zerolog.Logger
	// Authority is the Xauthority file holding the display's cookie; ""
	// is $XAUTHORITY (then ~/.Xauthority).
	Authority string
}

// DesktopOptions describe an agent's desktop for Screen.Desktop.
type DesktopOptions struct {
	// Name is the desktop's name, on its audit records and in Info.
	Name string
	// Display and Authority are its X display and cookie file.
	Display, Authority string
	// RecordDir keeps its batches' observations when the screen is
	// recorded (the desktop's own directory, not the person's).
	RecordDir string
	// AllowAct is whether agents may act on it (desktops enabled); no
	// per-batch consent applies, it is not the person's screen.
	AllowAct bool
	// ClipOwner, when set, takes ClipSet's text and owns the selection in
	// the Screen's stead: a desktop's worker, which outlives agentd, so
	// the text does too. ClipSet still checks and audits it.
	ClipOwner func(ctx context.Context, text string) error
}

// DefaultAuditMaxBytes caps the audit log when Options leave it zero: about
// 50,000 batches, weeks of heavy use, small enough to read with jq.
const DefaultAuditMaxBytes = 16 << 20

// reconnectPoll is how often Run retries a display whose socket it cannot
// watch (TCP displays, or /tmp/.X11-unix missing) or that refused a
// connection; watched sockets reconnect as soon as they appear.
const reconnectPoll = 2 * time.Second

// Screen owns the connection to one X display: screenshots, input, the
// one-batch-at-a-time lock, the consent gate, the kill switch and the audit
// log. Its methods are safe for concurrent use.
type Screen struct {
	opts     Options
	log      zerolog.Logger
	allowAct atomic.Bool
	// lockTimeout is a batch's wait for the screen when it gives none;
	// see SetLockTimeout.
	lockTimeout atomic.Int64

	audit *auditLog

	mu      sync.Mutex
	x       *xconn
	lastErr error // why there is no connection
	closed  bool
	changed chan struct{} // closed and replaced when the connection changes

	desk    *deskLock
	placed  pointerMark // where the last batch left the pointer
	frameID atomic.Uint64

	obsMu   sync.Mutex
	lastObs map[string]uint64 // caller key → hash of the last observation sent

	recordScreen atomic.Bool
	shotsMu      sync.Mutex
	shots        *shotStore // opened when recording is first turned on

	// person is the person's Screen when this one is an agent's desktop
	// (Screen.Desktop): it shares the person's audit log, recording
	// switch, lock timeout and kill switch; desktop names it.
	person  *Screen
	desktop string
	recDir  string
	// clipOwner owns the clipboard's text in the Screen's stead
	// (DesktopOptions.ClipOwner); nil: the Screen's own connection does.
	clipOwner func(ctx context.Context, text string) error
	// clipC is the clipboard's connection, opened on first use.
	clipMu sync.Mutex
	clipC  *clipboard
	// refusal is why Act is refused while acting is off.
	refusal string
	// life ends when the Screen closes: batches running or queued end
	// with it (a desktop removed with --force), instead of holding Close.
	life    context.Context
	endLife context.CancelFunc
	// lease is a person's hold on the input (TakeOver, lease.go).
	lease leaseState
	// testAfterMove, set by a test before any batch, runs after each
	// move a kill-switch look follows, once the motion is written and
	// before the look is sent: where a person's hand can come between.
	testAfterMove func(number int)
}

// errScreenClosed is why a batch ended when its Screen closed.
var errScreenClosed = errors.New("the screen was closed")

// Desktop returns a Screen for one of the agents' desktops: its own X
// connection, batch lock, typing bindings and observation memory, so
// batches on different desktops run at the same time, while the audit log
// (each record naming the desktop), the recording switch, the lock timeout
// and the kill switch are the person's: a pointer pushed into a corner of
// the person's screen stops every desktop's batch too. The caller runs
// and closes it (Run, Close); closing it leaves the person's audit log
// open.
func (s *Screen) Desktop(o DesktopOptions) *Screen {
	d := &Screen{
		opts: Options{Display: o.Display, Authority: o.Authority, AuditPath: s.opts.AuditPath,
			RecordScreenMaxBytes: s.opts.RecordScreenMaxBytes, Logger: s.opts.Logger},
		log:       s.opts.Logger.With().Str("component", "capture").Str("desktop", o.Name).Logger(),
		audit:     s.audit,
		desk:      newDeskLock(),
		lastObs:   make(map[string]uint64),
		changed:   make(chan struct{}),
		person:    s,
		desktop:   o.Name,
		refusal:   "acting on desktops is disabled; set desktops = true in config.toml or start agentd with --desktops",
		recDir:    o.RecordDir,
		clipOwner: o.ClipOwner,
	}
	d.life, d.endLife = context.WithCancel(context.Background())
	d.allowAct.Store(o.AllowAct)
	return d
}

// DesktopName is the desktop this Screen serves, "" for the person's.
func (s *Screen) DesktopName() string { return s.desktop }

// lockWait is a batch's default wait for the screen.
func (s *Screen) lockWait() time.Duration {
	if s.person != nil {
		return s.person.lockWait()
	}
	return time.Duration(s.lockTimeout.Load())
}

// recording reports whether observations are kept.
func (s *Screen) recording() bool {
	if s.person != nil {
		return s.person.recordScreen.Load()
	}
	return s.recordScreen.Load()
}

// New returns a Screen for opts.Display. It does not connect: the first
// call, or Run, does. It fails only when the audit log cannot be opened.
func New(opts Options) (*Screen, error) {
	s := &Screen{
		opts:    opts,
		log:     opts.Logger.With().Str("component", "capture").Logger(),
		desk:    newDeskLock(),
		lastObs: make(map[string]uint64),
		changed: make(chan struct{}),
	}
	s.life, s.endLife = context.WithCancel(context.Background())
	s.allowAct.Store(opts.AllowAct)
	s.SetLockTimeout(0)
	quietXGB(s.log)
	if opts.AuditPath != "" {
		max := opts.AuditMaxBytes
		if max <= 0 {
			max = DefaultAuditMaxBytes
		}
		a, err := openAudit(opts.AuditPath, max)
		if err != nil {
			return nil, err
		}
		s.audit = a
	}
	if opts.RecordScreen {
		if err := s.SetRecordScreen(true); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SetAllowAct turns acting on or off, e.g. after a config reload. A batch
// already running finishes.
func (s *Screen) SetAllowAct(allow bool) {
	if s.allowAct.Swap(allow) != allow {
		s.log.Info().Bool("allow_act", allow).Msg("acting consent changed")
	}
}

// SetLockTimeout sets how long a batch that gives no LockTimeout waits for
// the screen (the daemon passes its config's lock_timeout); not positive is
// DefaultLockTimeout.
func (s *Screen) SetLockTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultLockTimeout
	}
	s.lockTimeout.Store(int64(d))
}

// AllowAct reports whether Act may run.
func (s *Screen) AllowAct() bool { return s.allowAct.Load() }

// Close releases the X connection and its shared memory and closes the
// audit log. Later calls return ErrUnavailable.
func (s *Screen) Close() error {
	s.endLife()
	s.mu.Lock()
	x := s.x
	s.x = nil
	s.closed = true
	s.lastErr = errors.New("the screen was closed")
	s.mu.Unlock()
	if x != nil {
		x.close()
	}
	s.clipMu.Lock()
	if s.clipC != nil {
		s.clipC.close()
		<-s.clipC.done
		s.clipC = nil
	}
	s.clipMu.Unlock()
	if s.audit != nil && s.person == nil {
		return s.audit.close()
	}
	return nil
}

// conn returns the live connection, connecting when there is none.
func (s *Screen) conn() (*xconn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: the screen was closed", ErrUnavailable)
	}
	if s.x != nil {
		if s.x.alive() {
			return s.x, nil
		}
		dead := s.x
		s.forgetLocked(dead, fmt.Errorf("the X server at DISPLAY %s went away (%v)", s.opts.Display, dead.sock.Err()))
		// close waits for requests in flight, which end at once on a
		// dead socket; do it without holding mu.
		s.mu.Unlock()
		dead.close()
		s.mu.Lock()
		if s.closed {
			return nil, fmt.Errorf("%w: the screen was closed", ErrUnavailable)
		}
		if s.x != nil {
			return s.x, nil
		}
	}
	if s.opts.Display == "" {
		s.lastErr = errors.New("no X display: DISPLAY is not set; start agentd from the graphical session or import it (systemctl --user import-environment DISPLAY XAUTHORITY)")
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, s.lastErr)
	}
	x, err := dialXAuth(s.opts.Display, s.opts.Authority)
	if err != nil {
		s.lastErr = err
		return nil, fmt.Errorf("%w: %v; is the X server running?", ErrUnavailable, err)
	}
	s.x = x
	s.lastErr = nil
	s.signalLocked()
	s.log.Info().Str("display", s.opts.Display).Bool("mit_shm", x.shmOK).Bool("xtest", x.xtestOK).Msg("connected to X")
	return x, nil
}

// forgetLocked drops a dead connection; the caller closes it after
// unlocking mu.
func (s *Screen) forgetLocked(x *xconn, why error) {
	if s.x != x {
		return
	}
	s.x = nil
	s.lastErr = why
	s.signalLocked()
	s.log.Warn().Err(why).Msg("lost X connection")
}

func (s *Screen) signalLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// current returns the live connection and a channel closed on the next
// change, without connecting.
func (s *Screen) current() (*xconn, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.x, s.changed
}

// Run owns the display's lifecycle until ctx ends: it connects when the X
// socket appears (fsnotify on its directory, with a slow poll as a fallback),
// notices when the server goes away, and reconnects when it comes back. A
// batch in flight when the server goes away fails with ErrUnavailable.
// Without a display it waits for ctx. It returns nil when ctx ends.
func (s *Screen) Run(ctx context.Context) error {
	if s.opts.Display == "" {
		s.log.Warn().Msg("no X display: DISPLAY is not set; screenshots and acting are unavailable")
		<-ctx.Done()
		return nil
	}
	network, addr, _, _, err := parseDisplay(s.opts.Display)
	if err != nil {
		s.log.Error().Err(err).Msg("bad DISPLAY; screenshots and acting are unavailable")
		<-ctx.Done()
		return nil
	}
	var watcher *fsnotify.Watcher
	if network == "unix" {
		if w, err := fsnotify.NewWatcher(); err == nil {
			if err := w.Add(filepath.Dir(addr)); err == nil {
				watcher = w
				defer w.Close()
			} else {
				w.Close()
			}
		}
	}
	var fsEvents <-chan fsnotify.Event
	var fsErrors <-chan error
	if watcher != nil {
		fsEvents, fsErrors = watcher.Events, watcher.Errors
	}
	poll := time.NewTicker(reconnectPoll)
	defer poll.Stop()
	logged := false
	for {
		x, changed := s.current()
		var dead <-chan struct{}
		if x != nil {
			dead = x.sock.Dead()
		} else if _, err := s.conn(); err != nil {
			if !logged {
				s.log.Warn().Err(err).Msg("X display not reachable; waiting for it")
				logged = true
			}
		} else {
			logged = false
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-dead:
			s.mu.Lock()
			s.forgetLocked(x, fmt.Errorf("the X server at DISPLAY %s went away (%v)", s.opts.Display, x.sock.Err()))
			s.mu.Unlock()
			x.close()
		case <-changed:
		case ev := <-fsEvents:
			if ev.Name != addr || !ev.Has(fsnotify.Create) {
				continue
			}
			// The server creates its socket just before it listens;
			// give it a moment rather than failing and logging.
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		case err := <-fsErrors:
			s.log.Debug().Err(err).Msg("watching the X socket directory")
		case <-poll.C:
		}
	}
}

// Info describes the display, the connection and the package's state. It
// does not fail: without a connection it says why in Reason.
func (s *Screen) Info(ctx context.Context) Info {
	info := Info{Display: s.opts.Display, Desktop: s.desktop, AllowAct: s.AllowAct(), KillSwitch: "armed"}
	info.Holder, info.Waiting = s.desk.holder()
	x, err := s.conn()
	if err != nil {
		info.Reason = err.Error()
		return info
	}
	if err := x.enter(); err != nil {
		info.Reason = err.Error()
		return info
	}
	defer x.leave()
	r, err := x.screenRect()
	if err != nil {
		info.Reason = err.Error()
		return info
	}
	info.Connected = true
	info.Width, info.Height = r.Dx(), r.Dy()
	info.Monitors = x.monitors(r)
	if x.shmOK {
		info.Extensions = append(info.Extensions, "MIT-SHM")
		info.CaptureMethod = MethodSHM
	} else {
		info.CaptureMethod = MethodGetImage
	}
	info.CaptureWhy = x.shmWhy
	if !x.pixelOK {
		info.CaptureWhy = x.pixelWhy
	}
	if x.xtestOK {
		info.Extensions = append(info.Extensions, "XTEST")
	}
	info.InputWhy = x.xtestWhy
	if x.xkbOK {
		info.Extensions = append(info.Extensions, "XKEYBOARD")
	}
	if x.randrOK {
		info.Extensions = append(info.Extensions, "RANDR")
	}
	info.KeyboardLayout, info.KeyboardVariant = x.keyboardLayout()
	if s.person != nil {
		if s.person.cornered() {
			info.KillSwitch = "tripped: the pointer rests in a corner of the person's screen; move it away to allow acting"
		}
	} else if p, _, err := x.pointer(); err == nil && inCorner(p, r) && !s.placed.is(p) {
		info.KillSwitch = "tripped: the pointer rests in a screen corner; move it away to allow acting"
	}
	return info
}

var xgbLogOnce sync.Once

// quietXGB sends xgb's own log lines (it logs to stderr through a package
// variable) to the first Screen's logger at debug level, once per process.
func quietXGB(l zerolog.Logger) {
	xgbLogOnce.Do(func() {
		xgb.Logger = log.New(debugWriter{l}, "", 0)
	})
}

type debugWriter struct{ l zerolog.Logger }

func (w debugWriter) Write(p []byte) (int, error) {
	w.l.Debug().Str("from", "xgb").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
