package config

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExampleDocumentsEverySetting checks config.example.toml against the
// settings the code knows: every key is there, with its default, and
// marked live or restart as the code says.
func TestExampleDocumentsEverySetting(t *testing.T) {
	data, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Load(write(t, string(data)), nil)
	if err != nil {
		t.Fatalf("the example does not load: %v", err)
	}
	def := Defaults()
	for _, f := range Fields() {
		if l.Sources[f.Key] != FromFile {
			t.Errorf("the example does not set %q", f.Key)
		}
		if got, want := l.Settings.Value(f), def.Value(f); got != want {
			t.Errorf("the example sets %s = %s, the default is %s", f.Key, got, want)
		}
		// The comment block above the key says Live or Restart.
		re := regexp.MustCompile(`(?m)((?:^#.*\n)+)` + regexp.QuoteMeta(f.Key) + ` =`)
		m := re.FindStringSubmatch(string(data))
		if m == nil {
			t.Errorf("%s has no comment in the example", f.Key)
			continue
		}
		if want := map[bool]string{true: "Live.", false: "Restart."}[f.Live]; !strings.Contains(m[1], want) {
			t.Errorf("%s's comment %q does not say %q", f.Key, m[1], want)
		}
	}
}

func TestEverySettingRoundTrips(t *testing.T) {
	s := Settings{
		Socket: "/tmp/x.sock", StateDir: "/tmp/state", LogLevel: "debug", LogFormat: "json", Display: ":5",
		AllowAct: true, MaxConnections: 7, MaxSessions: 5, ReadTimeout: Duration(3 * time.Second), ShutdownGrace: Duration(time.Second),
		WriteTimeout: Duration(7 * time.Second), IdleTimeout: Duration(3 * time.Minute),
		AskTimeout: Duration(time.Minute), AskIdle: Duration(250 * time.Millisecond), LockTimeout: Duration(2 * time.Second),
		EventLogCap: 1 << 20, ChannelQueue: 9, AuditLogCap: 1 << 21, MemoryBudget: 64 << 20, RecordScreen: true, RecordScreenCap: 1 << 22,
		SessionLauncher: LauncherFork, SessionMemoryMax: 4 << 30, SessionCPUWeight: 50, SessionRestart: RestartOnReboot,
		Desktops: true, MaxDesktops: 3, DesktopIdle: Duration(10 * time.Minute), DesktopServer: DesktopServerXvfb,
		View: true, ViewIdle: Duration(time.Minute), NotifyTerminal: "foot -e",
	}
	var b strings.Builder
	for _, f := range Fields() {
		b.WriteString(f.Key + " = " + s.Value(f) + "\n")
	}
	l, err := Load(write(t, b.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Settings != s {
		t.Errorf("round trip:\n got %+v\nwant %+v", l.Settings, s)
	}
	def := Defaults()
	for _, f := range Fields() {
		if s.Value(f) == def.Value(f) {
			t.Errorf("test value of %s equals its default; it proves nothing", f.Key)
		}
	}
}

func TestFlagsOverrideTheFile(t *testing.T) {
	p := write(t, "allow_act = false\nmax_connections = 9\n")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fv := Flags(fs)
	if err := fs.Parse([]string{"--allow-act", "--read-timeout", "2s"}); err != nil {
		t.Fatal(err)
	}
	l, err := Load(p, fv)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Settings.AllowAct || l.Sources["allow_act"] != FromFlag {
		t.Errorf("allow_act = %v from %s, want true from the flag", l.Settings.AllowAct, l.Sources["allow_act"])
	}
	if l.Settings.MaxConnections != 9 || l.Sources["max_connections"] != FromFile {
		t.Errorf("max_connections = %d from %s, want 9 from the file", l.Settings.MaxConnections, l.Sources["max_connections"])
	}
	if l.Settings.ReadTimeout.D() != 2*time.Second || l.Sources["read_timeout"] != FromFlag {
		t.Errorf("read_timeout = %v from %s", l.Settings.ReadTimeout.D(), l.Sources["read_timeout"])
	}
	if l.Sources["log_level"] != FromDefault {
		t.Errorf("log_level from %s, want default", l.Sources["log_level"])
	}
}

func TestBadConfigs(t *testing.T) {
	long := "/tmp/" + strings.Repeat("s", 120)
	cases := []struct {
		name, text string
		want       []string // all must appear in the error
	}{
		{"unknown key", "log_level = \"info\"\nallow_akt = true\n", []string{":2:", "allow_akt", "unknown key"}},
		{"wrong type", "max_connections = \"many\"\n", []string{":1:", "max_connections", "whole number"}},
		{"wrong duration", "read_timeout = \"soon\"\n", []string{":1:", "read_timeout"}},
		{"duration without unit", "\nask_idle = 5\n", []string{":2:", "ask_idle", "unit", `"1.5s"`}},
		{"duration as a float", "ask_idle = 0.5\n", []string{":1:", "ask_idle", "unit"}},
		{"negative limit", "\n\nmax_connections = -3\n", []string{":3:", "max_connections", "positive"}},
		{"zero queue", "channel_queue = 0\n", []string{"channel_queue", "positive"}},
		{"idle timeout without unit", "idle_timeout = 300\n", []string{":1:", "idle_timeout", "unit"}},
		{"idle timeout too short", "\nidle_timeout = \"10ms\"\n", []string{":2:", "idle_timeout", "under a second", `"1s"`, `"5m0s"`}},
		{"write timeout too short", "write_timeout = \"0s\"\n", []string{":1:", "write_timeout", "under a second", `"30s"`}},
		{"budget below a frame", "memory_budget = 1048576\n", []string{":1:", "memory_budget", "below one frame", "16 MiB"}},
		{"socket too long", "socket = \"" + long + "\"\n", []string{"socket", "shorter", "--socket", "AGENTD_SOCKET"}},
		{"relative socket", "socket = \"agentd.sock\"\n", []string{"socket", "absolute"}},
		{"bad display", "display = \"zero\"\n", []string{"display", ":0"}},
		{"bad level", "log_level = \"loud\"\n", []string{":1:", `log_level "loud" is not debug, info, warn or error`}},
		{"bad launcher", "\nsession_launcher = \"cron\"\n", []string{":2:", `session_launcher "cron" is not auto, systemd or fork`}},
		{"bad restart", "session_restart = \"sometimes\"\n", []string{":1:", `session_restart "sometimes" is not no, on-reboot or always`}},
		{"bad log format", "log_format = \"xml\"\n", []string{":1:", `log_format "xml" is not json or console`}},
		{"bad desktop server", "desktop_server = \"vnc\"\n", []string{":1:", "desktop_server", "auto, xvnc or xvfb"}},
		{"not toml", "this is not toml\n", []string{"config.toml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(write(t, tc.text), nil)
			if err == nil {
				t.Fatalf("loaded %q without error", tc.text)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), "config.toml") && tc.name != "socket too long" {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestFilesThatAreNotConfigs(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir, nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v, want an error saying so", err)
	}
	// Missing: defaults.
	l, err := Load(filepath.Join(dir, "none.toml"), nil)
	if err != nil || l.Path != "" || l.Settings != Defaults() {
		t.Errorf("missing file: %v %+v, want defaults", err, l)
	}
	// Empty: defaults, from the file.
	l, err = Load(write(t, ""), nil)
	if err != nil || l.Settings != Defaults() {
		t.Errorf("empty file: %v, want defaults", err)
	}
	// A display with no X server is a warning, not an error.
	l, err = Load(write(t, "display = \":987\"\n"), nil)
	if err != nil || len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], ":987") {
		t.Errorf("display without server: %v %v, want one warning", err, l.Warnings)
	}
	if os.Getuid() == 0 {
		// Unreadable only bites non-root; a foreign owner bites root too.
		foreign := write(t, "allow_act = true\n")
		os.Chown(foreign, 65534, 65534)
		link := filepath.Join(dir, "config.toml")
		os.Symlink(foreign, link)
		if _, err := Load(link, nil); err == nil || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("symlink to another user's file: %v, want a refusal naming uid 65534", err)
		}
	} else {
		p := write(t, "allow_act = true\n")
		os.Chmod(p, 0)
		if _, err := Load(p, nil); err == nil {
			t.Errorf("unreadable file loaded")
		}
	}
}

// Every problem of a file at once, in the order of its lines, an unknown
// key with the nearest known one (issue 24 item 6).
func TestEveryProblemAtOnceInLineOrder(t *testing.T) {
	p := write(t, "log_level = \"loud\"\nmax_conections = 5\nask_idle = 5\nallow_act = \"yes\"\nfrobnicate = 1\nwrite_timeout = \"10ms\"\n")
	_, err := Load(p, nil)
	if err == nil {
		t.Fatal("a file with six problems loaded")
	}
	msg := err.Error()
	want := []string{
		"6 problems in the config",
		p + `:1: key "log_level"`,
		p + `:2: unknown key "max_conections"; did you mean "max_connections"?`,
		p + `:3: key "ask_idle" must be a duration in quotes`,
		p + `:4: key "allow_act" must be true or false`,
		p + `:5: unknown key "frobnicate"; the known keys`,
		p + `:6: key "write_timeout": write_timeout 10ms is under a second`,
	}
	at := 0
	for _, w := range want {
		i := strings.Index(msg[at:], w)
		if i < 0 {
			t.Fatalf("the error lacks %q after what came before:\n%s", w, msg)
		}
		at += i + len(w)
	}
	// One problem reads as it always did: one line.
	_, err = Load(write(t, "max_conections = 5\n"), nil)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `did you mean "max_connections"?`) {
		t.Errorf("one unknown key: %v; want one line with the suggestion", err)
	}
}
