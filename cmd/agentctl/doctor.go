package main

// agentctl doctor: the questions a person asks when something does not
// work, each answered pass, fail (with the fix) or skipped (with why it
// does not apply here). It uses only what the daemon already serves
// (agent.hello, agent.screen) and what the client can see itself (the
// socket, the state directory, systemd, .mcp.json).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentd/agentd/internal/buildinfo"
	"github.com/agentd/agentd/pkg/wire"
)

// The outcomes of a check.
const (
	checkPass    = "pass"
	checkFail    = "fail"
	checkSkipped = "skipped"
)

// minFreeBytes is the free space under the state directory below which
// doctor fails: event logs grow with every session's output, and a full
// disk stops them.
const minFreeBytes = 256 << 20

// doctorCheck is one check's outcome.
type doctorCheck struct {
	Name   string `json:"name"`
	Status string `json:"status"` // pass, fail or skipped
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorResult is what `agentctl doctor` reports.
type doctorResult struct {
	Checks []doctorCheck `json:"checks"`
	Failed int           `json:"failed"`
}

func doctorVerb() command {
	return verb[*doctorResult]{
		use:     "doctor",
		summary: "check agentd's installation and setup; each failure comes with its fix",
		long: "Check what agentd needs: the daemon and its version against the installed one, the socket's and\n" +
			"state directory's owner and modes, the systemd units, the display as the daemon sees it (none\n" +
			"configured is skipped: sessions-only use is a setup, not a failure), MIT-SHM and XTEST, the\n" +
			"consent to act, the config file (agentd --check-config), the desktop notifications (no session bus\n" +
			"is skipped, with why), free space for the session logs, what\n" +
			"agents' desktops run (Xvfb or Xvnc as desktop_server says, openbox, CJK and emoji fonts; with\n" +
			"desktops off, a missing one is skipped), the Claude Code bridge in this directory's .mcp.json, and\n" +
			"which running agent CLI sessions report through their hooks and which do not, and why.\n" +
			"A check that does not apply here says skipped and why.\n\n" +
			"Exits 0 when no check failed, 1 when one did.",
		run: func(ctx context.Context, e *env, args []string) (*doctorResult, error) {
			r := e.doctor(ctx)
			if r.Failed > 0 {
				e.status = 1
			}
			return r, nil
		},
		human: func(w io.Writer, r *doctorResult) error {
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			for _, c := range r.Checks {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Status, c.Name, c.Detail)
				if c.Fix != "" {
					fmt.Fprintf(tw, "\t\tfix: %s\n", c.Fix)
				}
			}
			tw.Flush()
			if r.Failed > 0 {
				fmt.Fprintf(w, "%d of %d checks failed\n", r.Failed, len(r.Checks))
			} else {
				fmt.Fprintln(w, "no check failed")
			}
			return nil
		},
	}
}

// doctor runs every check.
func (e *env) doctor(ctx context.Context) *doctorResult {
	r := &doctorResult{}
	add := func(c doctorCheck) {
		r.Checks = append(r.Checks, c)
		if c.Status == checkFail {
			r.Failed++
		}
	}
	hello, daemon := e.checkDaemon(ctx)
	add(daemon)
	socket, stateDir := e.socket, defaultStateDir()
	if hello != nil {
		socket, stateDir = hello.Socket, hello.StateDir
	}
	add(checkPrivateDir("socket directory", filepath.Dir(socket)))
	add(checkSocketFile(socket, hello != nil))
	add(checkPrivateDir("state directory", stateDir))
	add(checkSystemd())
	for _, c := range e.checkScreen(ctx, hello != nil) {
		add(c)
	}
	add(checkConfig(ctx))
	add(checkNotifications(hello))
	add(checkFreeSpace(stateDir))
	for _, c := range checkDesktops(readDesktopConfig(ctx)) {
		add(c)
	}
	for _, c := range checkMCPConfig() {
		add(c)
	}
	add(e.checkHooks(ctx, hello != nil))
	return r
}

func (e *env) checkDaemon(ctx context.Context) (*wire.HelloResult, doctorCheck) {
	c := doctorCheck{Name: "daemon"}
	h, err := e.hello(ctx)
	if err != nil {
		c.Status, c.Detail = checkFail, explainSocket(err).Error()
		c.Fix = "start it: systemctl --user start agentd.socket, or run agentd; agentctl --socket names another socket"
		return nil, c
	}
	c.Status = checkPass
	c.Detail = fmt.Sprintf("agentd %s (build %s, pid %d) at %s", h.Version, h.Build, h.PID, h.Socket)
	if h.Version != buildinfo.Version {
		c.Status = checkFail
		c.Detail += fmt.Sprintf("; agentctl is %s", buildinfo.Version)
		c.Fix = "install agentd and agentctl together (make install), then restart agentd: systemctl --user restart agentd"
		return h, c
	}
	if path := installedDaemon(); path != "" {
		if fp, err := buildinfo.Fingerprint(path); err == nil && fp != h.Build {
			c.Status = checkFail
			c.Detail += fmt.Sprintf("; the installed %s is build %s", path, fp)
			c.Fix = "restart it to run the installed build: systemctl --user restart agentd"
		}
	}
	return h, c
}

// checkPrivateDir wants dir to be a directory of this user's that no one
// else can enter: the socket's directory guards the socket, and the state
// directory holds everything typed into every session.
func checkPrivateDir(name, dir string) doctorCheck {
	c := doctorCheck{Name: name}
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Status, c.Detail = checkSkipped, dir+" does not exist yet; agentd creates it (0700) when it starts"
		return c
	case err != nil:
		c.Status, c.Detail, c.Fix = checkFail, err.Error(), "make "+dir+" readable by you"
		return c
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		c.Status, c.Detail = checkFail, dir+" is a symbolic link"
		c.Fix = "replace it with a directory: rm " + dir + " && mkdir -m 700 " + dir
	case !st.IsDir():
		c.Status, c.Detail, c.Fix = checkFail, dir+" is not a directory", "remove it; agentd creates the directory"
	case sys != nil && int(sys.Uid) != os.Getuid():
		c.Status, c.Detail = checkFail, fmt.Sprintf("%s belongs to uid %d, not you (%d)", dir, sys.Uid, os.Getuid())
		c.Fix = "chown " + fmt.Sprint(os.Getuid()) + " " + dir + ", or point agentd elsewhere"
	case st.Mode().Perm()&0o077 != 0:
		c.Status, c.Detail = checkFail, fmt.Sprintf("%s is %04o: others can enter it", dir, st.Mode().Perm())
		c.Fix = "chmod 700 " + dir
	default:
		c.Status, c.Detail = checkPass, fmt.Sprintf("%s is yours, %04o", dir, st.Mode().Perm())
	}
	return c
}

func checkSocketFile(path string, reachable bool) doctorCheck {
	c := doctorCheck{Name: "socket"}
	st, err := os.Lstat(path)
	if err != nil {
		if reachable {
			c.Status, c.Detail = checkSkipped, path+" is not on this machine (a forwarded socket?)"
			return c
		}
		c.Status, c.Detail = checkFail, path+" does not exist"
		c.Fix = "start agentd (systemctl --user start agentd.socket), or give the socket it uses with --socket"
		return c
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	switch {
	case st.Mode()&fs.ModeSocket == 0:
		c.Status, c.Detail, c.Fix = checkFail, path+" is not a socket", "remove it and restart agentd"
	case sys != nil && int(sys.Uid) != os.Getuid():
		c.Status, c.Detail = checkFail, fmt.Sprintf("%s belongs to uid %d, not you", path, sys.Uid)
		c.Fix = "stop the other user's agentd, remove " + path + " and start yours"
	case st.Mode().Perm()&0o077 != 0:
		c.Status, c.Detail = checkFail, fmt.Sprintf("%s is %04o: others may connect", path, st.Mode().Perm())
		c.Fix = "chmod 600 " + path + "; agentd creates it 0600 when it starts"
	default:
		c.Status, c.Detail = checkPass, fmt.Sprintf("%s is yours, %04o", path, st.Mode().Perm())
	}
	return c
}

// checkSystemd wants agentd.socket enabled in the user's systemd, when
// there is a user manager: a container or a session without one has no
// units to check.
func checkSystemd() doctorCheck {
	c := doctorCheck{Name: "systemd"}
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		c.Status, c.Detail = checkSkipped, "systemd is not running on this machine (a container?); start agentd by hand"
		return c
	}
	if _, err := exec.LookPath("systemctl"); err != nil {
		c.Status, c.Detail = checkSkipped, "no systemctl on $PATH"
		return c
	}
	if err := exec.Command("systemctl", "--user", "show-environment").Run(); err != nil {
		c.Status, c.Detail = checkSkipped, "no systemd user manager for this session"
		return c
	}
	out, _ := exec.Command("systemctl", "--user", "is-enabled", "agentd.socket").Output()
	switch state := strings.TrimSpace(string(out)); state {
	case "enabled", "enabled-runtime", "linked", "alias":
		c.Status, c.Detail = checkPass, "agentd.socket is "+state+": agentd starts at the first agentctl call"
	case "", "not-found":
		c.Status, c.Detail = checkFail, "agentd's units are not installed"
		c.Fix = "make install, then systemctl --user daemon-reload && systemctl --user enable --now agentd.socket"
	default:
		c.Status, c.Detail = checkFail, "agentd.socket is "+state
		c.Fix = "systemctl --user enable --now agentd.socket"
	}
	return c
}

// checkScreen asks the daemon about its display: reachable, the
// extensions screenshots and input need, and the consent to act.
func (e *env) checkScreen(ctx context.Context, reachable bool) []doctorCheck {
	display := doctorCheck{Name: "display"}
	ext := doctorCheck{Name: "x extensions"}
	consent := doctorCheck{Name: "consent"}
	skipAll := func(why string) []doctorCheck {
		for _, c := range []*doctorCheck{&display, &ext, &consent} {
			c.Status, c.Detail = checkSkipped, why
		}
		return []doctorCheck{display, ext, consent}
	}
	if !reachable {
		return skipAll("agentd is not reachable")
	}
	s, err := e.client().Screen(ctx)
	if err != nil {
		display.Status, display.Detail = checkFail, err.Error()
		display.Fix = displayFix
		ext.Status, ext.Detail = checkSkipped, "no display"
		consent.Status, consent.Detail = checkSkipped, "no display"
		return []doctorCheck{display, ext, consent}
	}
	if !s.Connected && (s.Display == "" || s.Display == "none") {
		// Headless is a setup of its own (sessions only), not a failure:
		// nothing asked agentd for a display.
		display.Status, display.Detail = checkSkipped, "not configured: agentd has no display ("+s.Reason+"); sessions work, screenshots and acting are off"
		display.Fix = "to use a screen: " + displayFix
		ext.Status, ext.Detail = checkSkipped, "no display"
	} else if !s.Connected {
		display.Status, display.Detail, display.Fix = checkFail, fmt.Sprintf("agentd cannot reach its display %q: %s", s.Display, s.Reason), displayFix
		ext.Status, ext.Detail = checkSkipped, "no display"
	} else {
		display.Status, display.Detail = checkPass, fmt.Sprintf("%s, %dx%d, %s", s.Display, s.Width, s.Height, count(len(s.Monitors), "monitor"))
		var missing []string
		for _, want := range []string{"MIT-SHM", "XTEST"} {
			if !slices.Contains(s.Extensions, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 {
			ext.Status, ext.Detail = checkPass, "MIT-SHM and XTEST present"
		} else {
			ext.Status, ext.Detail = checkFail, strings.Join(missing, " and ")+" missing on "+s.Display
			ext.Fix = "use a local X server with MIT-SHM (fast screenshots) and XTEST (input); a display forwarded over ssh lacks MIT-SHM, and Xvfb needs +extension XTEST if built without it"
		}
	}
	consent.Status = checkPass
	if s.AllowAct {
		consent.Detail = "acting on the screen is allowed"
	} else {
		consent.Detail = "acting on the screen is not allowed (screenshots only); to allow it: allow_act = true in the config, or agentd --allow-act"
	}
	return []doctorCheck{display, ext, consent}
}

// checkConfig has agentd check its configuration file (agentd
// --check-config: the daemon's own parser, every error at once), with the
// agentd installed beside agentctl or on $PATH. A running agentd re-reads
// the file on change and keeps its last good config on an error, so a bad
// file can hide until the next start: this says so now.
func checkConfig(ctx context.Context) doctorCheck {
	c := doctorCheck{Name: "config"}
	agentd := installedDaemon()
	if agentd == "" {
		c.Status, c.Detail = checkSkipped, "no agentd beside agentctl or on $PATH to check it with"
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out, errb strings.Builder
	cmd := exec.CommandContext(ctx, agentd, "--check-config")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		c.Status, c.Detail = checkFail, strings.ReplaceAll(msg, "\n", "; ")
		c.Fix = "edit the file as the errors say; agentd --check-config checks it again"
		return c
	}
	c.Status, c.Detail = checkPass, strings.TrimPrefix(strings.TrimSpace(out.String()), "agentd: ")
	return c
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// displayFix says how to give agentd a display: through the user's
// systemd when agentd runs under it, else by starting it with one.
const displayFix = "under systemd: systemctl --user import-environment DISPLAY XAUTHORITY (or set display in the config), then systemctl --user restart agentd; started by hand: restart it with DISPLAY set, or agentd --display :0"

func checkFreeSpace(dir string) doctorCheck {
	c := doctorCheck{Name: "free space"}
	// The state directory may not exist yet: measure where it will be.
	for dir != "/" && dir != "." {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		c.Status, c.Detail = checkSkipped, fmt.Sprintf("statfs %s: %v", dir, err)
		return c
	}
	free := st.Bavail * uint64(st.Bsize)
	c.Detail = fmt.Sprintf("%s free under %s", bytesText(free), dir)
	if free < minFreeBytes {
		c.Status = checkFail
		c.Fix = fmt.Sprintf("free space there (at least %s): agentctl rm ended sessions, or set state_dir elsewhere", bytesText(minFreeBytes))
	} else {
		c.Status = checkPass
	}
	return c
}

func bytesText(n uint64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 10<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// mcpConfig is the part of .mcp.json doctor reads.
type mcpConfig struct {
	MCPServers map[string]struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	} `json:"mcpServers"`
}

const bridgeConfig = `{"mcpServers": {"agentd": {"command": "agentctl", "args": ["channel", "mcp"]}}}`

// checkMCPConfig looks for the Claude Code bridge (agentctl channel mcp) in
// the current directory's .mcp.json, where Claude Code reads it. A project
// may name only agentctl's MCP server (agentctl mcp, the README's Models
// section) and ask nothing through a channel: that is a setup of its own,
// so the server's binary is checked and the bridge is skipped, not failed.
func checkMCPConfig() []doctorCheck {
	c := doctorCheck{Name: "claude code bridge"}
	b, err := os.ReadFile(".mcp.json")
	if errors.Is(err, fs.ErrNotExist) {
		c.Status, c.Detail = checkSkipped, "no .mcp.json in this directory; the bridge is configured per project: "+bridgeConfig
		return []doctorCheck{c}
	}
	if err != nil {
		c.Status, c.Detail, c.Fix = checkFail, err.Error(), "make .mcp.json readable"
		return []doctorCheck{c}
	}
	var cfg mcpConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		c.Status, c.Detail, c.Fix = checkFail, ".mcp.json is not valid JSON: "+err.Error(), "fix the JSON; the bridge's entry is "+bridgeConfig
		return []doctorCheck{c}
	}
	names := slices.Sorted(maps.Keys(cfg.MCPServers)) // the same server first each run
	var tools *doctorCheck
	for _, name := range names {
		s := cfg.MCPServers[name]
		if filepath.Base(s.Command) != "agentctl" || len(s.Args) == 0 {
			continue
		}
		switch {
		case len(s.Args) >= 2 && s.Args[0] == "channel" && s.Args[1] == "mcp":
			c.Status, c.Detail, c.Fix = checkMCPBinary(name, s.Command, "channel mcp")
			return []doctorCheck{c}
		case s.Args[0] == "mcp" && tools == nil:
			tools = &doctorCheck{Name: "mcp server"}
			tools.Status, tools.Detail, tools.Fix = checkMCPBinary(name, s.Command, "mcp")
		}
	}
	if tools != nil {
		c.Status = checkSkipped
		c.Detail = ".mcp.json runs agentctl mcp (agentd's tools for a model) and not the channel bridge, which only asks through a channel need (agentctl ask to a Claude Code session); to add it: " + bridgeConfig
		return []doctorCheck{*tools, c}
	}
	c.Status, c.Detail = checkFail, ".mcp.json has no server running agentctl channel mcp"
	c.Fix = "add the bridge to .mcp.json: " + bridgeConfig
	return []doctorCheck{c}
}

// checkMCPBinary checks that the server name of .mcp.json can run command
// (agentctl, by name on $PATH or by path) and that agentctl-mcp is beside it.
func checkMCPBinary(name, command, sub string) (status, detail, fix string) {
	path, err := exec.LookPath(command)
	if err != nil {
		switch {
		case !strings.Contains(command, "/"):
			return checkFail, fmt.Sprintf("server %q runs %s, which is not on $PATH", name, command),
				"give the full path to agentctl in .mcp.json, or install it on $PATH (make install)"
		case errors.Is(err, fs.ErrNotExist):
			return checkFail, fmt.Sprintf("server %q runs %s, which does not exist", name, command),
				"fix the path in .mcp.json (command -v agentctl prints where it is), or install agentctl there (make install)"
		}
		return checkFail, fmt.Sprintf("server %q runs %s: %v", name, command, err), "make " + command + " an executable file (chmod +x), or fix the path in .mcp.json"
	}
	if _, err := mcpBinaryBeside(path); err != nil {
		return checkFail, err.Error(), "make install puts agentctl-mcp beside agentctl"
	}
	return checkPass, fmt.Sprintf("server %q runs %s %s", name, path, sub), ""
}

// defaultStateDir is where agentd keeps its state unless configured
// otherwise; doctor uses it when the daemon cannot say.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentd")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "agentd")
}
