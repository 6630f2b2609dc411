package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentd/agentd/internal/notify"
	"github.com/agentd/agentd/pkg/agentstate"
	"github.com/agentd/agentd/pkg/session"
	"github.com/agentd/agentd/pkg/wire"
)

// Desktop notifications of the agents' states (issue 27): the daemon
// subscribes to every session's state changes (Sessions.Subscribe) and
// shows, over the session bus (internal/notify):
//
//   - one notification when a session enters needs_approval (actions
//     Approve, Deny and Open) or needs_attention (Open); a new prompt of
//     the same session replaces it in place; the same prompt seen again
//     (a redraw) does not notify twice;
//   - one when a session enters waiting after a turn at least
//     NotifyWaitingAfter long (Open) — never after a short turn, so a
//     conversation of quick turns is quiet;
//   - each closed when its wait is over (the session works again, its
//     program ends, it is removed), and all at the daemon's stop, since
//     their actions could reach no one after it. A prompt's notification
//     outlives a change to another state by askCloseGrace, so the same
//     prompt back at once (a flicker) is the notification still shown,
//     not a second one.
//
// Approve and Deny answer exactly as agentctl approve/deny NAME --prompt
// ID with the prompt id the notification was made for: a prompt that
// changed since is refused, and the refusal is shown. Who may invoke an
// action: any client of the session bus can ask the notification server
// to (dunstctl does), and any can send a signal named ActionInvoked.
// internal/notify believes a signal only from the bus name that owned
// org.freedesktop.Notifications when the notification was sent, and only
// for an id it sent; this file acts only on the notification it shows now
// for that session; and the prompt id limits the act to the prompt shown.
// A program of the same user that drives the notification server can
// still approve the prompt it shows, as it could type into the terminal.

// notifyCallTimeout bounds each call to the notification server.
const notifyCallTimeout = time.Second

// stateNotifier turns state changes into desktop notifications.
//
// Lock order: mu only; no bus call is made under it.
type stateNotifier struct {
	sessions  Sessions
	n         *notify.Notifier
	log       zerolog.Logger
	waitAfter time.Duration
	terminal  []string // with agentctl attach NAME appended; nil: no Open
	agentctl  string
	changed   func() // the status changed: hello's cache is stale

	// serial orders change and a deferred show (a needs_approval told
	// by a hook, waiting for the screen's prompt id): each reads what is
	// shown and shows at its turn. Held across bus calls; taken before mu.
	serial sync.Mutex

	mu      sync.Mutex
	status  wire.NotificationsStatus
	actions bool                   // the server shows actions
	shown   map[string]*shownState // by session
	pending map[string]*deferred   // deferred shows and closes, by session (serial)
}

// deferred is a show or a close of a session's notification that waits
// for its timer unless another change of the session comes first.
type deferred struct {
	t *time.Timer
	// closeDue is when a deferred close falls due (zero: a deferred
	// show): a change that defers the close again keeps this time.
	closeDue time.Time
}

// askCloseGrace is how long a needs_approval or needs_attention
// notification stays after its session leaves that state for another
// (not for a life change, which closes it at once): when the same prompt
// is back within it (a hook's working told between two looks at the same
// prompt), the notification simply stays, instead of closing and showing
// a second one.
const askCloseGrace = time.Second

// promptIDWait is how long a needs_approval a hook told without the
// prompt's choices waits for the screen's: the CLI runs the hook before it
// draws the prompt (Claude Code waits for its PermissionRequest hook), so
// the prompt id often follows within this, and the notification is shown
// once, with Approve and Deny. Past it the notification shows without
// them, at once (a person hears of the wait within a quarter second), and
// the same notification is replaced in place with them when the screen
// tells the prompt again (its Again record, a change like any other).
const promptIDWait = 150 * time.Millisecond

// shownState is the notification shown for a session's state now.
type shownState struct {
	session  string
	state    string
	promptID string
	id       uint32 // 0: none shown (the person closed it, or it failed)
}

// startStateNotifier starts the notifications, or says why they are off;
// it returns what stops them.
func (d *Daemon) startStateNotifier(ctx context.Context) func() {
	sn := &stateNotifier{sessions: d.sessions, log: d.log.With().Str("component", "notify").Logger(),
		waitAfter: d.cfg.NotifyWaitingAfter, shown: map[string]*shownState{}, pending: map[string]*deferred{},
		changed: func() { d.helloJSON.Store(nil) }}
	d.notices = sn
	if !d.cfg.Notifications {
		sn.status = wire.NotificationsStatus{Why: "off in the configuration (notifications = false)"}
		return func() {}
	}
	n, err := notify.New(notify.Options{Address: d.cfg.NotifyBus, CallTimeout: notifyCallTimeout})
	if err != nil {
		sn.status = wire.NotificationsStatus{Why: err.Error()}
		sn.log.Info().Err(err).Msg("desktop notifications are off")
		return func() {}
	}
	sn.n = n
	sn.status = wire.NotificationsStatus{On: true, Bus: n.Address(), Why: "the notification server has not answered yet"}
	sn.terminal, sn.agentctl = terminalCommand(d.cfg.NotifyTerminal)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); sn.probe(ctx); sn.follow(ctx) }()
	go func() { defer wg.Done(); sn.events(ctx) }()
	return func() {
		cancel()
		sn.closeAll()
		n.Shutdown()
		wg.Wait()
	}
}

// terminalCommand is the command Open runs (before "agentctl attach
// NAME"): the configured one, else x-terminal-emulator -e, else xterm -e;
// nil when none is installed. agentctl is the one beside agentd, else the
// one on PATH.
func terminalCommand(configured []string) ([]string, string) {
	ctl := "agentctl"
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), "agentctl"); isExecutableFile(p) {
			ctl = p
		}
	}
	if ctl == "agentctl" {
		if p, err := exec.LookPath("agentctl"); err == nil {
			ctl = p
		} else {
			return nil, ""
		}
	}
	if len(configured) > 0 {
		if _, err := exec.LookPath(configured[0]); err != nil {
			return nil, ctl
		}
		return configured, ctl
	}
	for _, t := range []string{"x-terminal-emulator", "xterm"} {
		if p, err := exec.LookPath(t); err == nil {
			return []string{p, "-e"}, ctl
		}
	}
	return nil, ctl
}

func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// probe asks the server who it is and whether it shows actions, for
// doctor and for the actions offered.
func (sn *stateNotifier) probe(ctx context.Context) {
	info, err := sn.n.ServerInformation(ctx)
	var caps []string
	if err == nil {
		caps, err = sn.n.Capabilities(ctx)
	}
	sn.mu.Lock()
	defer sn.changed()
	defer sn.mu.Unlock()
	if err != nil {
		sn.status = wire.NotificationsStatus{On: true, Bus: sn.n.Address(), Why: err.Error()}
		sn.actions = true // offered anyway: a server that starts later may show them
		sn.log.Warn().Err(err).Msg("the notification server does not answer; notifications will be tried")
		return
	}
	sn.actions = slices.Contains(caps, "actions")
	sn.status = wire.NotificationsStatus{On: true, Bus: sn.n.Address(), Server: info.Name + " " + info.Version, Actions: sn.actions}
	if !sn.actions {
		sn.status.Why = info.Name + " shows no actions: approve with agentctl approve NAME"
	}
}

// Status is what doctor shows.
func (sn *stateNotifier) Status() wire.NotificationsStatus {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	return sn.status
}

// follow subscribes to every session's changes until ctx ends, again
// after an error.
func (sn *stateNotifier) follow(ctx context.Context) {
	for {
		err := sn.sessions.Subscribe(ctx, session.SubscribeRequest{Current: true, Follow: true}, func(c session.StateChange) error {
			sn.change(ctx, c)
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		sn.log.Warn().Err(err).Msg("state changes: subscription ended; again in a second")
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// change shows, replaces or closes the notification of c's session.
func (sn *stateNotifier) change(ctx context.Context, c session.StateChange) {
	sn.serial.Lock()
	defer sn.serial.Unlock()
	var closeDue time.Time // a close deferred by askCloseGrace was pending
	if p := sn.pending[c.Session]; p != nil {
		p.t.Stop() // a later word about the session: it decides
		closeDue = p.closeDue
		delete(sn.pending, c.Session)
	}
	sn.mu.Lock()
	old := sn.shown[c.Session]
	sn.mu.Unlock()
	state := agentstate.State(c.State)
	switch {
	case c.Kind != session.ChangeState && c.Kind != session.ChangeCurrent:
		state = "" // a life change: whatever was asked is over
	case c.Kind == session.ChangeCurrent && state == agentstate.Waiting:
		state = "" // the turn before is unknown
	}
	promptID := ""
	if c.Detail != nil {
		promptID = c.Detail.PromptID
	}
	switch {
	case state.Asks():
		if old != nil && old.state == c.State && old.promptID == promptID && (closeDue.IsZero() || old.id != 0) {
			// The same wait: never twice. Also when it was left for a
			// moment (closeDue) while its notification still shows; but
			// once the person has closed or answered it, the same prompt
			// back after other work is a new wait.
			return
		}
		if old != nil && old.state == c.State && old.promptID == "" && old.id == 0 {
			// The same wait told again with its prompt id, after the
			// person closed its notification: noted, not shown again.
			sn.mu.Lock()
			old.promptID = promptID
			sn.mu.Unlock()
			return
		}
		if state == agentstate.NeedsApproval && promptID == "" && c.Source == string(agentstate.SourceHook) {
			sn.deferShow(ctx, c)
			return
		}
		sn.show(ctx, old, c, promptID)
	case state == agentstate.Waiting && sn.waitAfter > 0 && c.Turn >= sn.waitAfter:
		if old != nil && old.state == c.State {
			return
		}
		sn.show(ctx, old, c, "")
	default:
		if old == nil {
			return
		}
		if c.Kind == session.ChangeState && agentstate.State(old.state).Asks() {
			if closeDue.IsZero() {
				closeDue = time.Now().Add(askCloseGrace)
			}
			sn.deferForget(ctx, old, closeDue)
			return
		}
		sn.forget(ctx, old)
	}
}

// deferForget closes old's notification at due unless another change of
// its session comes first (askCloseGrace). Called with serial held.
func (sn *stateNotifier) deferForget(ctx context.Context, old *shownState, due time.Time) {
	p := &deferred{closeDue: due}
	p.t = time.AfterFunc(time.Until(due), func() {
		sn.serial.Lock()
		defer sn.serial.Unlock()
		if sn.pending[old.session] != p {
			return // a later change came meanwhile
		}
		delete(sn.pending, old.session)
		sn.forget(ctx, old)
	})
	sn.pending[old.session] = p
}

// deferShow shows c after promptIDWait unless another change of its
// session comes first (the screen's prompt id, or the wait over). Called
// with serial held.
func (sn *stateNotifier) deferShow(ctx context.Context, c session.StateChange) {
	p := &deferred{}
	p.t = time.AfterFunc(promptIDWait, func() {
		sn.serial.Lock()
		defer sn.serial.Unlock()
		if sn.pending[c.Session] != p {
			return // a later change came meanwhile
		}
		delete(sn.pending, c.Session)
		sn.mu.Lock()
		old := sn.shown[c.Session]
		sn.mu.Unlock()
		sn.show(ctx, old, c, "")
	})
	sn.pending[c.Session] = p
}

// show notifies c, replacing old's notification.
func (sn *stateNotifier) show(ctx context.Context, old *shownState, c session.StateChange, promptID string) {
	msg := sn.message(c)
	if old != nil {
		msg.Replaces = old.id
	}
	s := &shownState{session: c.Session, state: c.State, promptID: promptID}
	sn.mu.Lock()
	sn.shown[c.Session] = s // before the call: an action can arrive before Notify returns
	sn.mu.Unlock()
	id, err := sn.n.Notify(ctx, msg)
	if err != nil {
		sn.log.Warn().Err(err).Str("session", c.Session).Str("state", c.State).Msg("notify")
		if old != nil && old.id != 0 {
			sn.closeID(ctx, old.id)
		}
		return
	}
	sn.mu.Lock()
	if sn.shown[c.Session] == s {
		s.id = id
	}
	sn.mu.Unlock()
	sn.log.Debug().Str("session", c.Session).Str("state", c.State).Uint32("id", id).Msg("notified")
}

// message is the notification of c.
func (sn *stateNotifier) message(c session.StateChange) notify.Notification {
	m := notify.Notification{App: "agentd"}
	d := c.Detail
	if d == nil {
		d = &agentstate.Detail{}
	}
	var body []string
	for _, x := range []string{d.Question, joinNonEmpty(": ", d.Tool, d.Subject), d.Message} {
		if x != "" {
			body = append(body, x)
		}
	}
	switch agentstate.State(c.State) {
	case agentstate.NeedsApproval:
		m.Summary = c.Session + " needs approval"
		m.Urgency, m.Timeout = notify.Critical, notify.NeverExpire
		if sn.actionsShown() && d.PromptID != "" {
			if _, ok := d.Choice(agentstate.RoleApprove); ok {
				m.Actions = append(m.Actions, notify.Action{Key: actionApprove, Label: "Approve"})
			}
			if _, ok := d.Choice(agentstate.RoleDeny); ok {
				m.Actions = append(m.Actions, notify.Action{Key: actionDeny, Label: "Deny"})
			}
		}
		if d.PromptID != "" {
			body = append(body, "agentctl approve "+c.Session+" --prompt "+d.PromptID)
		}
	case agentstate.NeedsAttention:
		m.Summary = c.Session + " needs attention"
		m.Urgency, m.Timeout = notify.Critical, notify.NeverExpire
		if d.Kind != "" {
			body = append([]string{string(d.Kind)}, body...)
		}
	default:
		m.Summary = c.Session + " is waiting"
		body = []string{fmt.Sprintf("its turn took %s", c.Turn.Round(time.Second))}
	}
	if sn.terminal != nil && sn.actionsShown() {
		m.Actions = append(m.Actions, notify.Action{Key: actionOpen, Label: "Open"})
	}
	m.Body = strings.Join(body, "\n")
	return m
}

func joinNonEmpty(sep string, xs ...string) string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return strings.Join(out, sep)
}

func (sn *stateNotifier) actionsShown() bool {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	return sn.actions
}

// The action keys.
const (
	actionApprove = "approve"
	actionDeny    = "deny"
	actionOpen    = "open"
)

// forget closes s's notification: its wait is over.
func (sn *stateNotifier) forget(ctx context.Context, s *shownState) {
	sn.mu.Lock()
	if sn.shown[s.session] == s {
		delete(sn.shown, s.session)
	}
	sn.mu.Unlock()
	if s.id != 0 {
		sn.closeID(ctx, s.id)
	}
}

func (sn *stateNotifier) closeID(ctx context.Context, id uint32) {
	if err := sn.n.Close(ctx, id); err != nil {
		sn.log.Debug().Err(err).Uint32("id", id).Msg("close notification")
	}
}

// closeAll closes every notification shown, at the daemon's stop.
func (sn *stateNotifier) closeAll() {
	sn.serial.Lock()
	for name, p := range sn.pending {
		p.t.Stop()
		delete(sn.pending, name)
	}
	sn.serial.Unlock()
	sn.mu.Lock()
	all := sn.shown
	sn.shown = map[string]*shownState{}
	sn.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*notifyCallTimeout)
	defer cancel()
	for _, s := range all {
		if s.id != 0 {
			sn.closeID(ctx, s.id)
		}
	}
}

// events acts on what the person does with the notifications.
func (sn *stateNotifier) events(ctx context.Context) {
	for {
		var ev notify.Event
		var ok bool
		select {
		case ev, ok = <-sn.n.Events():
			if !ok {
				return
			}
		case <-ctx.Done():
			return
		}
		switch ev.Kind {
		case notify.ActionInvoked:
			if s := sn.byID(ev.ID); s != nil {
				go sn.act(ctx, s, ev.ActionKey)
			}
		case notify.Closed:
			// Closed by the person (or expired): the wait stays known, so
			// it is not notified again; its id is no longer shown.
			sn.mu.Lock()
			for _, s := range sn.shown {
				if s.id == ev.ID {
					s.id = 0
				}
			}
			sn.mu.Unlock()
		case notify.BusLost:
			sn.log.Warn().Err(ev.Err).Msg("the session bus connection ended; the next notification connects again")
		}
	}
}

// byID is the notification shown now with id, or nil: an action on one
// that was replaced or closed is ignored.
func (sn *stateNotifier) byID(id uint32) *shownState {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	for _, s := range sn.shown {
		if s.id == id && id != 0 {
			c := *s
			return &c
		}
	}
	return nil
}

// act does what the person chose on s's notification.
func (sn *stateNotifier) act(ctx context.Context, s *shownState, key string) {
	log := sn.log.With().Str("session", s.session).Str("action", key).Str("prompt", s.promptID).Logger()
	switch key {
	case actionApprove, actionDeny:
		if s.promptID == "" {
			return
		}
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, err := sn.sessions.Approve(actx, s.session, key == actionDeny, s.promptID)
		if err != nil {
			log.Warn().Err(err).Msg("notification action refused")
			msg := notify.Notification{App: "agentd", Summary: s.session + ": not " + map[string]string{actionApprove: "approved", actionDeny: "denied"}[key],
				Body: err.Error(), Replaces: s.id, Timeout: 10 * time.Second}
			if _, nerr := sn.n.Notify(ctx, msg); nerr != nil {
				log.Debug().Err(nerr).Msg("notify the refusal")
			}
			return
		}
		log.Info().Str("choice", r.Choice).Msg("answered from a notification")
	case actionOpen:
		if sn.terminal == nil {
			return
		}
		argv := append(slices.Clone(sn.terminal), sn.agentctl, "attach", s.session)
		cmd := exec.Command(argv[0], argv[1:]...)
		if err := cmd.Start(); err != nil {
			log.Warn().Err(err).Strs("argv", argv).Msg("open a terminal")
			return
		}
		go func() { _ = cmd.Wait() }()
		log.Info().Strs("argv", argv).Msg("opened a terminal")
	}
}

// notificationsStatus is the notifications' state for agent.hello; nil
// before Run has started them.
func (d *Daemon) notificationsStatus() *wire.NotificationsStatus {
	if d.notices == nil {
		return nil
	}
	st := d.notices.Status()
	return &st
}
