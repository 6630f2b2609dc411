// Package agentstate tells what an agent CLI in a session is doing, from
// its rendered screen and from its own hooks. It owns the pure part of
// issue 27: recognising the CLI (Detect, ParseAgent), the states and what
// a prompt asks (State, Detail, Choice), one screen classifier per CLI
// (Classify), the hooks' payloads (FromHook) and the rule that fuses both
// over time (Tracker). It imports nothing of agentd: the daemon fills a
// Screen from its terminal model, runs agentctl hook's payloads through
// FromHook and feeds one Tracker per session.
//
// # The two sources
//
// Hooks are exact but blind to dialogs: no hook fires for the trust
// dialog, the API key dialog or an error banner, and Claude Code fires no
// Stop when the person interrupts a turn (Esc at a permission prompt).
// The screen sees everything drawn but is read by patterns that a CLI
// release can change. The Tracker's rule (see Tracker) lets a hook decide
// at once, lets the screen decide dialogs at once and everything else once
// the hook's word is older than the CLI's redraw (DefaultHookGrace).
//
// # What each CLI shows (verified on Claude Code 2.1.328, Codex 0.169.0,
// Gemini CLI 0.61.0 at 80x24 and 120x40; testdata/screens, captured by
// test/agentstate_capture_test.go)
//
// Claude Code: working while its footer says "esc to interrupt" (the
// spinner row above it changes its verb at random); waiting when the
// prompt box ("❯" between two rules) is drawn without it; a permission
// prompt replaces the box with the tool's title, the command between
// dashed rules, "Do you want to proceed?" and numbered options ("❯ 1.
// Yes", "2. Yes, and always allow…", "3. Yes, and switch to auto mode",
// "4. No") over "Esc to cancel": enter approves once (option 1 is
// highlighted), esc denies and leaves "Interrupted · What should Claude do
// instead?" with the prompt box back (waiting). An API error is retried
// with "401 … · retrying in 14s · attempt 8/10" on the spinner row (ten
// times by default: minutes), then stays as "API Error: …" in the last
// turn, and every later prompt is refused with "Please run /login" until
// the key is fixed: both are needs_attention (error, or usage_limit for
// "Request rejected (429)"). Its AskUserQuestion menu ("☐ File", the
// question, numbered options, "Enter to select · ↑/↓ to navigate · Esc to
// cancel") is needs_approval of kind question.
//
// Codex: see codex.go. Gemini CLI: see gemini.go. On all three, enter on
// the highlighted "Yes"/"Allow once" (Codex: the text y) approves once
// and esc denies; test/agentstate_capture_test.go sends exactly the keys
// Classify offers and checks the tool's effect on disk.
//
// # Hooks, as the real CLIs send them (testdata/hooks)
//
// Claude Code (--settings FILE with "hooks"): every payload carries
// session_id and transcript_path. A turn is UserPromptSubmit, PreToolUse,
// PermissionRequest (no Notification came within the turn), PostToolUse,
// Stop; an interrupted turn ends with no hook at all.
//
// Codex (-c features.codex_hooks=true, hooks.json beside its config, and
// -c notify=[…]): hooks carry session_id and transcript_path; at start-up
// it asks to review new hooks (Kind hooks, needs_attention) and runs none
// until trusted. Its notify program gets agent-turn-complete with the
// thread id — also for side threads (a conversation's title), which the
// Tracker drops by id. A failed turn fires no Stop.
//
// Gemini CLI (hooks in settings.json): runs hooks only in a trusted
// folder. BeforeAgent/AfterAgent frame every turn (AfterAgent also after
// a failed request), Notification with notification_type ToolPermission
// carries the command.
//
// # What stays ambiguous
//
//   - An error banner is needs_attention only while it belongs to the
//     last turn (after the last prompt the person gave); typing a new
//     prompt clears it. A CLI that prints an error and goes on by itself
//     is read as needs_attention until the next prompt.
//   - A retry banner (Claude Code's "retrying in 14s · attempt 8/10",
//     Codex's "Reconnecting... 3/5") reads needs_attention when its status
//     will not pass by itself (401, 403, 429, a key, a limit) and working
//     otherwise (5xx, overload): the screen cannot tell a retry that will
//     succeed from one that will not.
//   - A question menu the model asks (Claude Code's AskUserQuestion, which
//     also fires PermissionRequest with that tool name) is recognised by
//     shape: numbered options, no prompt box, "Enter to select"/"Esc to
//     cancel". Its options have role other: which one answers is the
//     person's to say.
//   - Gemini CLI retries a 429 for minutes behind its usual "Thinking…
//     (esc to cancel)" row: working on screen, and no hook says
//     otherwise until the retries end.
//   - Codex hides its "Working" row while the model's text streams; the
//     turn's end is marked by "Worked for 7s • 03:22" (or "■ …", "✗ You
//     canceled…") once it is over. A last turn with neither reads
//     Unknown, and the Tracker keeps what the hooks said
//     (UserPromptSubmit: working; Stop or notify's agent-turn-complete:
//     waiting). Whether a turn shorter than a second gets its "Worked
//     for" line was not seen; if not, only the hooks end it.
//   - The prompt id hashes what the screen shows (kind, tool, subject,
//     question, option labels), not what the CLI holds: two prompts for
//     the same command in a row share an id, and a banner's id is its kind
//     (its text changes as it retries).
package agentstate
