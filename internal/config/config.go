// Package config is agentd's settings: one table of every setting (its
// TOML key, command-line flag, default, documentation and whether it can
// change while the daemon runs), the strict parser of
// $XDG_CONFIG_HOME/agentd/config.toml, and the merge of defaults, file and
// flags with the source of each value. It knows nothing of the daemon; the
// daemon applies what it is given. It must not import pkg/daemon,
// pkg/session or pkg/capture.
package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/agentd/agentd/internal/limits"
)

// Settings are every setting of the daemon. Each field's tags give its TOML
// key, its documentation and whether it applies live (reload) or needs a
// restart. The flag of a setting is its key with '-' for '_'.
type Settings struct {
	Socket          string   `toml:"socket" doc:"socket path (empty: $AGENTD_SOCKET, else $XDG_RUNTIME_DIR/agentd/agentd.sock)" live:"false"`
	StateDir        string   `toml:"state_dir" doc:"sessions and the audit log (empty: $XDG_STATE_HOME/agentd)" live:"false"`
	LogLevel        string   `toml:"log_level" doc:"debug, info, warn or error" live:"true"`
	LogFormat       string   `toml:"log_format" doc:"json or console (empty: console on a terminal, json otherwise)" live:"false"`
	Display         string   `toml:"display" doc:"X display to serve, e.g. \":0\" (empty: $DISPLAY; none: the screen is unavailable)" live:"false"`
	AllowAct        bool     `toml:"allow_act" doc:"consent to agents acting on the screen (agent.act)" live:"true"`
	MaxConnections  int      `toml:"max_connections" doc:"most client connections at once; more are answered busy" live:"true"`
	MaxSessions     int      `toml:"max_sessions" doc:"most live sessions at once; more spawns are answered busy" live:"false"`
	ReadTimeout     Duration `toml:"read_timeout" doc:"how long a frame may take to arrive once begun" live:"true"`
	ShutdownGrace   Duration `toml:"shutdown_grace" doc:"how long requests in flight may finish when stopping" live:"true"`
	WriteTimeout    Duration `toml:"write_timeout" doc:"how long a client may leave a frame unread before it is dropped (a channel listener with it)" live:"true"`
	IdleTimeout     Duration `toml:"idle_timeout" doc:"how long a connection with nothing in flight and no channel, follow or stream open is kept" live:"true"`
	AskTimeout      Duration `toml:"ask_timeout" doc:"default deadline of agent.ask" live:"true"`
	AskIdle         Duration `toml:"ask_idle" doc:"quiet that ends an ask on a program whose prompt could not be learned" live:"true"`
	LockTimeout     Duration `toml:"lock_timeout" doc:"default wait for a session's or the screen's lock" live:"true"`
	EventLogCap     int64    `toml:"event_log_cap" doc:"bytes of event log kept per session; older records rotate out" live:"false"`
	ChannelQueue    int      `toml:"channel_queue" doc:"messages queued per channel before pushes are answered busy" live:"true"`
	AuditLogCap     int64    `toml:"audit_log_cap" doc:"bytes of audit log kept before it rotates" live:"false"`
	RecordScreen    bool     `toml:"record_screen" doc:"keep every act batch's observation beside the audit log for agentctl record --screen" live:"true"`
	RecordScreenCap int64    `toml:"record_screen_cap" doc:"bytes of kept observations; the oldest go first" live:"false"`
	MemoryBudget    int64    `toml:"memory_budget" doc:"bytes held at once for clients (requests, answers, channel queues), across connections; past it they are answered busy" live:"false"`
	// The session keys: how workers start, and the limits of each
	// session's own cgroup where the user manager gives it one.
	SessionLauncher  string   `toml:"session_launcher" doc:"how session workers start: auto (a systemd user unit each where a user manager answers, else forked), systemd or fork" live:"false"`
	SessionMemoryMax int64    `toml:"session_memory_max" doc:"bytes of memory each session may use (its unit's MemoryMax); 0 is no limit; needs a user manager" live:"true"`
	SessionCPUWeight int      `toml:"session_cpu_weight" doc:"each session's CPU share, 1 to 10000 (its unit's CPUWeight; 100 is every unit's); 0 leaves systemd's default; needs a user manager" live:"true"`
	SessionRestart   string   `toml:"session_restart" doc:"when a session spawned without --restart is started again: no, on-reboot (when agentd starts after the machine rebooted under it) or always (also when its program exits non-zero, with back-off and a ceiling)" live:"true"`
	Hooks            bool     `toml:"hooks" doc:"wire an agent CLI's hooks to agentd for its state when a spawn does not say (--hooks); false: its screen alone" live:"true"`
	Desktops         bool     `toml:"desktops" doc:"let agents have X desktops of their own (agentctl desktop new, spawn --desktop); acting on them needs no allow_act" live:"true"`
	MaxDesktops      int      `toml:"max_desktops" doc:"most desktops running at once; more are answered busy" live:"true"`
	DesktopIdle      Duration `toml:"desktop_idle_timeout" doc:"remove a desktop unused for this long with no live session on it (\"0s\": never)" live:"true"`
	DesktopServer    string   `toml:"desktop_server" doc:"X server of a new desktop when desktop new --server does not say: auto (Xvnc when installed, else Xvfb), xvnc or xvfb" live:"true"`
	// The view: agentd's page for people, on 127.0.0.1 only.
	View     bool     `toml:"view" doc:"serve the view (the page of sessions and terminals, on 127.0.0.1 only) from start; agentctl view starts it anyway" live:"false"`
	ViewIdle Duration `toml:"view_idle" doc:"how long the view listens with no page connected before it stops" live:"false"`
	// Desktop notifications of the agents' states, over the session bus.
	Notifications      bool     `toml:"notifications" doc:"desktop notifications when an agent needs approval or attention, or waits after a long turn (off by itself with no session bus)" live:"false"`
	NotifyWaitingAfter Duration `toml:"notify_waiting_after" doc:"a turn at least this long gives a notification when the agent waits (\"0s\": never)" live:"false"`
	NotifyTerminal     string   `toml:"notify_terminal" doc:"the terminal a notification's Open runs agentctl attach in, with its option to run a command (empty: x-terminal-emulator -e, else xterm -e)" live:"false"`
}

// Defaults are the settings when neither file nor flag says otherwise.
func Defaults() Settings {
	return Settings{
		LogLevel:        "info",
		MaxConnections:  512,
		MaxSessions:     256,
		ReadTimeout:     Duration(10 * time.Second),
		ShutdownGrace:   Duration(5 * time.Second),
		WriteTimeout:    Duration(30 * time.Second),
		IdleTimeout:     Duration(5 * time.Minute),
		AskTimeout:      Duration(10 * time.Minute),
		AskIdle:         Duration(1500 * time.Millisecond),
		LockTimeout:     Duration(10 * time.Second),
		EventLogCap:     64 << 20,
		ChannelQueue:    1024,
		AuditLogCap:     16 << 20,
		MemoryBudget:    256 << 20,
		RecordScreenCap: 256 << 20,
		SessionLauncher: LauncherAuto,
		SessionRestart:  RestartNo,
		Hooks:           true,
		MaxDesktops:     8,
		DesktopIdle:     Duration(time.Hour),
		DesktopServer:   DesktopServerAuto,
		ViewIdle:        Duration(15 * time.Minute),

		Notifications:      true,
		NotifyWaitingAfter: Duration(30 * time.Second),
	}
}

// The values of session_restart (pkg/session's restart policies; a test
// in cmd/agentd holds them equal).
const (
	RestartNo       = "no"
	RestartOnReboot = "on-reboot"
	RestartAlways   = "always"
)

// The values of desktop_server.
const (
	DesktopServerAuto = "auto"
	DesktopServerXvnc = "xvnc"
	DesktopServerXvfb = "xvfb"
)

// The values of session_launcher.
const (
	LauncherAuto    = "auto"
	LauncherSystemd = "systemd"
	LauncherFork    = "fork"
)

// Duration is a time.Duration written as "10s" or "1m30s" in TOML.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText writes the duration as Go writes it ("1m30s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "10s", "250ms", "1m30s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"10s\" or \"1m30s\"", b)
	}
	*d = Duration(v)
	return nil
}

// Source says where a setting's value came from.
type Source string

// Sources.
const (
	FromDefault Source = "default"
	FromFile    Source = "file"
	FromFlag    Source = "flag"
)

// Field describes one setting.
type Field struct {
	Key  string // TOML key
	Flag string // command-line flag
	Doc  string
	Live bool // applies without a restart
	// Type is "string", "bool", "int" or "duration", for docs.
	Type  string
	index int
}

// Fields lists every setting, in declaration order.
func Fields() []Field {
	t := reflect.TypeFor[Settings]()
	out := make([]Field, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("toml")
		typ := f.Type.Kind().String()
		switch {
		case f.Type == reflect.TypeFor[Duration]():
			typ = "duration"
		case f.Type.Kind() == reflect.Int64 || f.Type.Kind() == reflect.Int:
			typ = "int"
		}
		out = append(out, Field{Key: key, Flag: strings.ReplaceAll(key, "_", "-"), Doc: f.Tag.Get("doc"),
			Live: f.Tag.Get("live") == "true", Type: typ, index: i})
	}
	return out
}

// Value returns the setting's value as text, as it would be written in TOML.
func (s *Settings) Value(f Field) string {
	v := reflect.ValueOf(s).Elem().Field(f.index)
	switch x := v.Interface().(type) {
	case Duration:
		return strconv.Quote(x.D().String())
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v.Interface())
}

// Loaded is the effective configuration and where each value came from.
type Loaded struct {
	Settings Settings
	Sources  map[string]Source // by key
	Path     string            // the file read, or "" when there was none
	Warnings []string          // problems that do not stop the daemon
	// inUse holds, by key, the value the daemon will use when the setting
	// leaves it to the environment (an empty socket, state_dir or display),
	// and where it comes from; see Resolve.
	inUse map[string][2]string
}

// Resolve records the value the daemon uses for key when the setting
// leaves it open, and why (such as "$DISPLAY"), for Print.
func (l *Loaded) Resolve(key, value, why string) {
	if l.inUse == nil {
		l.inUse = map[string][2]string{}
	}
	l.inUse[key] = [2]string{value, why}
}

// DefaultPath is $XDG_CONFIG_HOME/agentd/config.toml (~/.config/...).
func DefaultPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "agentd", "config.toml")
}

// Flags defines a flag for every setting on fs, with the defaults as flag
// defaults. Apply reads back the ones that were set.
func Flags(fs *flag.FlagSet) *FlagValues {
	fv := &FlagValues{fs: fs, vals: Defaults()}
	v := reflect.ValueOf(&fv.vals).Elem()
	for _, f := range Fields() {
		p := v.Field(f.index).Addr().Interface()
		switch p := p.(type) {
		case *string:
			fs.StringVar(p, f.Flag, *p, f.Doc)
		case *bool:
			fs.BoolVar(p, f.Flag, *p, f.Doc)
		case *int:
			fs.IntVar(p, f.Flag, *p, f.Doc)
		case *int64:
			fs.Int64Var(p, f.Flag, *p, f.Doc)
		case *Duration:
			fs.DurationVar((*time.Duration)(p), f.Flag, p.D(), f.Doc)
		}
	}
	return fv
}

// FlagValues holds the settings given on the command line.
type FlagValues struct {
	fs   *flag.FlagSet
	vals Settings
}

// Load reads the config file at path (missing is fine: defaults), applies
// the flags that were set on top, validates the result, and says where
// each value came from. fv may be nil (no flags).
func Load(path string, fv *FlagValues) (*Loaded, error) { return load(path, false, fv) }

// LoadNamed is Load for a file the user named (agentd --config): a missing
// file is an error, not defaults, since a typo would otherwise go unseen.
func LoadNamed(path string, fv *FlagValues) (*Loaded, error) { return load(path, true, fv) }

func load(path string, named bool, fv *FlagValues) (*Loaded, error) {
	l := &Loaded{Settings: Defaults(), Sources: map[string]Source{}}
	var problems problemList
	for _, f := range Fields() {
		l.Sources[f.Key] = FromDefault
	}
	data, err := readConfig(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && named:
		return nil, fmt.Errorf("config %s does not exist; check the path given to --config, or leave --config out to use %s", path, DefaultPath())
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		l.Path = path
		set, errs := parse(path, data, &l.Settings)
		problems = append(problems, errs...)
		for _, k := range set {
			l.Sources[k] = FromFile
		}
	}
	if fv != nil {
		src, dst := reflect.ValueOf(&fv.vals).Elem(), reflect.ValueOf(&l.Settings).Elem()
		byFlag := map[string]Field{}
		for _, f := range Fields() {
			byFlag[f.Flag] = f
		}
		fv.fs.Visit(func(fl *flag.Flag) {
			if f, ok := byFlag[fl.Name]; ok {
				dst.Field(f.index).Set(src.Field(f.index))
				l.Sources[f.Key] = FromFlag
			}
		})
	}
	problems = append(problems, validate(path, data, l)...)
	if err := problems.err(path); err != nil {
		return nil, err
	}
	return l, nil
}

// problem is one thing wrong with the settings, at a line of the file (0:
// a flag, a default or the whole file).
type problem struct {
	line int
	msg  string
}

// problemList is every problem found in one load: all are reported at
// once, in the order of the file's lines (then those not in the file), so
// a person fixes them in one pass instead of one per run.
type problemList []problem

func (ps problemList) err(path string) error {
	if len(ps) == 0 {
		return nil
	}
	sort.SliceStable(ps, func(i, j int) bool {
		li, lj := ps[i].line, ps[j].line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0 // lines of the file first
		}
		return li < lj
	})
	if len(ps) == 1 {
		return errors.New(ps[0].msg)
	}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = "  " + p.msg
	}
	return fmt.Errorf("%d problems in the config (%s):\n%s", len(ps), path, strings.Join(msgs, "\n"))
}

// didYouMean is " (did you mean NAME?)" for the known key nearest to key
// (at most a third of its letters changed), or "".
func didYouMean(key string) string {
	best, bestD := "", len(key)/3+1
	for _, f := range Fields() {
		if d := editDistance(key, f.Key); d < bestD {
			best, bestD = f.Key, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance of a and b, in bytes (keys are
// ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// readConfig reads the file, refusing a directory and a file (or a symlink
// to a file) that belongs to another user: settings such as allow_act are
// consent, and nobody else may give it.
func readConfig(path string) ([]byte, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil, fs.ErrNotExist
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return nil, fmt.Errorf("config %s is a directory; the config is a TOML file", path)
	}
	if int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("config %s belongs to uid %d, not to you (uid %d); agentd reads only your own config — replace it with a file of your own", path, st.Uid, os.Getuid())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w; make it readable (chmod 600 %s)", path, err, path)
	}
	return data, nil
}

// parse decodes data strictly into s and returns the keys it set and every
// problem it found, each naming the file, the line and the key: unknown
// keys (with the nearest known one), values of the wrong type, durations
// without their unit. The well-formed keys are decoded even when others
// are not, so validate can judge their values in the same run.
func parse(path string, data []byte, s *Settings) ([]string, problemList) {
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		// Syntax, or a key set twice: go-toml stops at the first.
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			key := strings.Join(de.Key(), ".")
			if key == "" {
				key = keyAtLine(data, row)
			}
			if strings.Contains(de.Error(), "already") { // go-toml: "toml: key allow_act is already defined"
				return nil, problemList{{row, fmt.Sprintf("%s:%d: key %q is set twice (first on line %d); keep one", path, row, key, lineOf(data, key))}}
			}
			return nil, problemList{{row, fmt.Sprintf("%s:%d: %s", path, row, de.Error())}}
		}
		return nil, problemList{{0, fmt.Sprintf("%s: %v", path, err)}}
	}
	fields := map[string]Field{}
	for _, f := range Fields() {
		fields[f.Key] = f
	}
	var problems problemList
	good := map[string]any{}
	for key, v := range raw {
		row := lineOf(data, key)
		f, known := fields[key]
		if !known {
			hint := didYouMean(key)
			if hint == "" {
				hint = "; the known keys are in config.example.toml (agentd --print-config lists them)"
			}
			problems = append(problems, problem{row, fmt.Sprintf("%s:%d: unknown key %q%s", path, row, key, hint)})
			continue
		}
		if why := typeProblem(f, v); why != "" {
			problems = append(problems, problem{row, fmt.Sprintf("%s:%d: key %q must be %s", path, row, key, why)})
			continue
		}
		good[key] = v
	}
	// The keys that are well formed, decoded as strictly as ever.
	text, err := toml.Marshal(good)
	if err == nil {
		dec := toml.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		err = dec.Decode(s)
	}
	if err != nil {
		problems = append(problems, problem{0, fmt.Sprintf("%s: %v", path, err)})
	}
	keys := make([]string, 0, len(good))
	for k := range good {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys, problems
}

// typeProblem says what f's value must be when v is not of its type, or "".
// go-toml would put a bare number straight into a Duration's int64 (ask_idle
// = 5 would be five nanoseconds), so a duration needs its unit, in quotes.
func typeProblem(f Field, v any) string {
	switch f.Type {
	case "duration":
		if why := durationProblem(v); why != "" {
			return fmt.Sprintf("a duration in quotes with its unit, such as %s = \"1.5s\"; %s", f.Key, why)
		}
	case "string":
		if _, ok := v.(string); !ok {
			return typeWords[f.Type]
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			return typeWords[f.Type]
		}
	case "int":
		if _, ok := v.(int64); !ok {
			return typeWords[f.Type]
		}
	}
	return ""
}

// durationProblem says what is wrong with v as a duration setting, or ""
// when it is one.
func durationProblem(v any) string {
	switch v := v.(type) {
	case string:
		if _, err := time.ParseDuration(v); err == nil {
			return ""
		}
		if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return fmt.Sprintf("%q has no unit (ms, s, m or h)", v)
		}
		if strings.ContainsAny(v, " \t") {
			return fmt.Sprintf("%q has a space; write the number and its unit together", v)
		}
		return fmt.Sprintf("%q is not a duration; units are ns, us, ms, s, m and h, as in \"1m30s\"", v)
	case int64, float64:
		return fmt.Sprintf("%v alone has no unit", v)
	default:
		return fmt.Sprintf("%v is not a duration", v)
	}
}

// typeWords say what a value of each setting type looks like.
var typeWords = map[string]string{
	"string":   "a string in quotes",
	"bool":     "true or false",
	"int":      "a whole number",
	"duration": "a duration in quotes, such as \"10s\"",
}

var keyLine = regexp.MustCompile(`^\s*([A-Za-z0-9_]+)\s*=`)

// keyAtLine returns the key assigned on line row (1-based) of data.
func keyAtLine(data []byte, row int) string {
	lines := bytes.Split(data, []byte("\n"))
	if row < 1 || row > len(lines) {
		return ""
	}
	if m := keyLine.FindSubmatch(lines[row-1]); m != nil {
		return string(m[1])
	}
	return ""
}

// lineOf returns the line where key is assigned in data, or 0.
func lineOf(data []byte, key string) int {
	for i, line := range bytes.Split(data, []byte("\n")) {
		if m := keyLine.FindSubmatch(line); m != nil && string(m[1]) == key {
			return i + 1
		}
	}
	return 0
}

var displayPattern = regexp.MustCompile(`^[A-Za-z0-9.\-]*:[0-9]+(\.[0-9]+)?$`)

// validate checks values that parse but make no sense, naming where they
// were set; it returns every problem, not the first.
func validate(path string, data []byte, l *Loaded) problemList {
	var problems problemList
	bad := func(key, format string, args ...any) {
		line := 0
		if l.Sources[key] == FromFile {
			line = lineOf(data, key)
		}
		problems = append(problems, problem{line, fmt.Sprintf(format, args...)})
	}
	s := &l.Settings
	where := func(key string) string {
		switch l.Sources[key] {
		case FromFlag:
			return "flag --" + strings.ReplaceAll(key, "_", "-")
		case FromFile:
			return fmt.Sprintf("%s:%d: key %q", path, lineOf(data, key), key)
		}
		return "default " + key
	}
	positive := map[string]int64{
		"max_connections": int64(s.MaxConnections), "max_sessions": int64(s.MaxSessions), "read_timeout": int64(s.ReadTimeout), "shutdown_grace": int64(s.ShutdownGrace),
		"ask_timeout": int64(s.AskTimeout), "ask_idle": int64(s.AskIdle), "lock_timeout": int64(s.LockTimeout),
		"event_log_cap": s.EventLogCap, "channel_queue": int64(s.ChannelQueue), "audit_log_cap": s.AuditLogCap, "record_screen_cap": s.RecordScreenCap,
		"max_desktops": int64(s.MaxDesktops),
	}
	for _, f := range Fields() {
		if v, ok := positive[f.Key]; ok && v <= 0 {
			bad(f.Key, "%s: %s must be positive, not %s", where(f.Key), f.Key, s.Value(f))
		}
	}
	// A client needs time to take a frame off its socket and to think
	// between requests; under a second either would cut healthy clients.
	for _, t := range []struct {
		key string
		v   Duration
	}{{"write_timeout", s.WriteTimeout}, {"idle_timeout", s.IdleTimeout}} {
		if t.v.D() < time.Second {
			bad(t.key, "%s: %s %s is under a second, which would cut off healthy clients; give at least \"1s\" (the default is %s)", where(t.key), t.key, t.v.D(), map[string]string{"write_timeout": `"30s"`, "idle_timeout": `"5m0s"`}[t.key])
		}
	}
	if s.DesktopIdle < 0 {
		bad("desktop_idle_timeout", "%s: desktop_idle_timeout %s is negative; give \"0s\" (never) or a duration such as \"1h\"", where("desktop_idle_timeout"), s.DesktopIdle.D())
	}
	// One frame must fit, or the largest requests could never pass.
	if s.MemoryBudget < MinMemoryBudget {
		bad("memory_budget", "%s: memory_budget %d is below one frame (%d bytes, 16 MiB); give at least that, 268435456 (256 MiB) is the default", where("memory_budget"), s.MemoryBudget, MinMemoryBudget)
	}
	// A word from a list: the message names the words a person may give.
	oneOf := func(key, v, words string, ok ...string) {
		if !slices.Contains(ok, v) {
			bad(key, "%s: %s %q is not %s", where(key), key, v, words)
		}
	}
	oneOf("log_level", s.LogLevel, "debug, info, warn or error", "debug", "info", "warn", "error")
	oneOf("session_launcher", s.SessionLauncher, "auto, systemd or fork", LauncherAuto, LauncherSystemd, LauncherFork)
	oneOf("session_restart", s.SessionRestart, "no, on-reboot or always", RestartNo, RestartOnReboot, RestartAlways)
	oneOf("desktop_server", s.DesktopServer, "auto, xvnc or xvfb", DesktopServerAuto, DesktopServerXvnc, DesktopServerXvfb)
	if s.SessionMemoryMax < 0 {
		bad("session_memory_max", "%s: session_memory_max %d is negative; give bytes (4294967296 is 4 GiB) or 0 for no limit", where("session_memory_max"), s.SessionMemoryMax)
	}
	if s.SessionCPUWeight < 0 || s.SessionCPUWeight > 10000 {
		bad("session_cpu_weight", "%s: session_cpu_weight %d is out of range; give 1 to 10000 (100 is the default share), or 0 to leave systemd's", where("session_cpu_weight"), s.SessionCPUWeight)
	}
	oneOf("log_format", s.LogFormat, "json or console", "", "json", "console")
	if len(s.Socket) > limits.MaxSocketPath {
		bad("socket", "%s: socket path is %d bytes, over the %d a Unix socket allows; set a shorter socket (the socket key in config.toml, --socket, or $AGENTD_SOCKET)", where("socket"), len(s.Socket), limits.MaxSocketPath)
	}
	if s.Socket != "" && !filepath.IsAbs(s.Socket) {
		bad("socket", "%s: socket %q must be an absolute path", where("socket"), s.Socket)
	}
	if s.Display != "" && s.Display != DisplayNone {
		if !displayPattern.MatchString(s.Display) {
			bad("display", "%s: display %q is not an X display such as \":0\"", where("display"), s.Display)
		}
		if host, num, _ := strings.Cut(s.Display, ":"); host == "" {
			num, _, _ = strings.Cut(num, ".")
			if _, err := os.Stat("/tmp/.X11-unix/X" + num); err != nil {
				l.Warnings = append(l.Warnings, fmt.Sprintf("%s: no X server runs on display %s now (no /tmp/.X11-unix/X%s); agentd will connect when one starts", where("display"), s.Display, num))
			}
		}
	}
	return problems
}

// Print writes the settings in use as TOML, each with its source; a value
// the setting leaves to the environment is shown as resolved (Resolve).
func (l *Loaded) Print(w *bytes.Buffer) {
	if l.Path != "" {
		fmt.Fprintf(w, "# file: %s\n", l.Path)
	} else {
		fmt.Fprintf(w, "# file: none (%s does not exist)\n", DefaultPath())
	}
	for _, f := range Fields() {
		if r, ok := l.inUse[f.Key]; ok {
			fmt.Fprintf(w, "%s = %s  # %s, from %s\n", f.Key, strconv.Quote(r[0]), l.Sources[f.Key], r[1])
			continue
		}
		fmt.Fprintf(w, "%s = %s  # %s\n", f.Key, l.Settings.Value(f), l.Sources[f.Key])
	}
}

// MinMemoryBudget is the smallest memory_budget: one frame of the wire's
// 16 MiB limit.
const MinMemoryBudget = 16 << 20

// DisplayNone is the display setting that turns the screen off.
const DisplayNone = "none"
