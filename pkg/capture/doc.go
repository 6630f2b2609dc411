// Package capture owns agentd's side of the user's X11 screen: one
// persistent X connection (github.com/BurntSushi/xgb), screenshots (MIT-SHM,
// or GetImage when the server cannot share memory), input through XTEST on
// the same connection, act batches with their validation and time budget,
// the one-batch-at-a-time desktop lock, the consent gate, the corner kill
// switch and the audit log.
//
// # Targets
//
// A Screen serves one display. The person's display has one; each of the
// agents' desktops (package desktop) has its own, made by Screen.Desktop:
// its own X connection (with the desktop's cookie file), batch lock,
// borrowed keycodes and observation memory, so batches on different
// desktops run at once and one desktop takes one batch at a time. What is
// the person's stays one: the audit log (a desktop's records name it), the
// recording switch, the lock timeout and the kill switch (a desktop's
// batch checks the pointer on the person's screen, not its own, which no
// hand moves). Acting on a desktop needs no per-batch consent; the daemon
// sets its AllowAct from the desktops setting.
//
// It knows nothing of the wire protocol and must not import pkg/wire,
// pkg/daemon or pkg/session: it exports Go types, methods and the sentinel
// errors in errors.go, which pkg/daemon maps to wire codes.
//
// # Lifecycle
//
// New never connects and never fails for a missing display. Methods connect
// on first use and return ErrUnavailable (with the reason) while there is no
// server. Run owns reconnection: it watches /tmp/.X11-unix with fsnotify,
// connects when the socket appears, notices when the server goes away and
// reconnects when it returns. Close releases the connection and shared
// memory.
//
// # Decisions where the specification was silent
//
//   - xgb does not survive its server going away (it panics on the next
//     request, may close a channel twice, and leaves reply waiters blocked)
//     and its Close can deadlock or panic. The connection therefore runs over
//     xsock, which follows the byte stream, answers every outstanding request
//     with a synthesized error when the socket dies, and makes Close safe. It
//     also supplies the MIT-MAGIC-COOKIE-1 from $XAUTHORITY. xgb still leaks
//     two id-generator goroutines per connection (one per X server restart).
//   - xgb's extension Init functions write process-wide maps without locks;
//     the package registers extension opcodes per connection instead and
//     presents extension errors to xgb as core errors.
//   - xgb's own log lines go to the first Screen's logger at debug level.
//   - Coordinates must be whole pixels inside the screen (fractions, NaN and
//     infinities are refused); wait, settle and scroll amounts out of range
//     are clamped, as in the act specification.
//   - A key may carry modifiers in its name ("ctrl+shift+t", "ctrl++" for
//     plus) and in Modifiers; meta, cmd and win mean super; option means
//     alt. A single character key types that character's key, with Shift or
//     AltGr when the layout needs them.
//   - key_down holds a key (or a modifier alone, "shift") as the key it is,
//     at no shift level, until its key_up; a key_up of a key not held is
//     refused. Modifiers on click, down, up and scroll are pressed before
//     that action and released after it. Both are in the batch's pressed
//     list, so a failed, cancelled or kill-switched batch releases them too.
//   - Typing: "\r\n" and "\r" press Enter once. Characters the keymap lacks
//     are bound to keycodes without symbols, then to XF86 media keys when
//     those run out, a chunk at a time, one ChangeKeyboardMapping per run
//     of adjacent keycodes. A borrowed keycode changes again (rebound for
//     the next chunk, or restored at the end of the batch) only once the
//     client owning the focus window has handled every key sent, told from
//     its event loop's wait in /proc (keyclient.go explains why this is
//     needed and when it falls back to a timed settle). A key the layout
//     lacks is bound with its lower and upper case so shift works. Caps
//     Lock on is turned off for the batch's typing and back on after.
//   - A hung X server (stopped, or alive but not answering) is found by the
//     connection's watchdog within about four seconds, or at the latest
//     half a second past a batch's budget: the connection is killed, every
//     call waiting on it fails at once (a batch with ErrTimeout naming the
//     action), and the Screen dials a new one. The xgb copy under
//     third_party stops its goroutines on Close, so reconnecting leaks none.
//   - The kill switch trips when the pointer is within 10 px of a corner and
//     the last batch did not leave it exactly there; waits check it every
//     50 ms. Info reports it.
//   - The desk lock is FIFO; at most MaxQueuedBatches wait, later ones get
//     ErrBusy. LockTimeout 0 means the Screen's (SetLockTimeout).
//   - Budget overruns return ErrTimeout (wire code timeout).
//   - Focus matches window title or WM_CLASS as a substring, ignoring case;
//     it uses _NET_ACTIVE_WINDOW when an EWMH window manager runs and
//     otherwise raises the window and sets the input focus itself. An
//     application it starts is detached (its own session, not our child).
//     Without a window manager the active window is the focus window.
//   - Screenshot paths must be absolute; files are written 0600 through a
//     temporary file and rename. MaxWidth never scales up.
//   - Observations are compared per CallerKey by a hash of the captured
//     pixels and output parameters, before encoding, so an unchanged screen
//     costs no encoding. ForgetCaller drops a key.
//   - A person's lease on a Screen's input (TakeOver, the view page's Take
//     over of a desktop) refuses batches with ErrBusy naming the holder, and
//     stops those running or waiting when it is taken, as the kill switch
//     does; screenshots go on. One lease at a time; lease.go.
//   - PNGs are 8-bit RGB with the Up filter, deflated in parallel strips;
//     JPEGs are 4:2:0, encoded in parallel strips joined by restart markers.
package capture
