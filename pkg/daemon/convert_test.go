package daemon

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/pkg/capture"
	"github.com/agentd/agentd/pkg/channel"
	"github.com/agentd/agentd/pkg/session"
)

// The converters from domain values to wire values are written by hand, so
// a field added on both sides and forgotten in between would go out as its
// zero value with no test failing. Each test below fills every field of the
// domain value (by reflection, so a new field is filled too), converts it,
// and insists that no field of the wire value is zero unless it is listed
// with the reason it may be (tailscale's TestPrefsEqual shape).

// fillAll sets every exported field reachable from v to a non-zero value:
// strings "x", numbers 7 (int64s 7e9, so a time.Duration is 7 s and
// survives conversion to milliseconds), true, a time, one element of each
// slice and map, a filled value behind each pointer.
func fillAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillAll(v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i))
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillAll(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(k)
		fillAll(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int64:
		v.SetInt(7e9)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(7)
	case reflect.Interface:
		// Left nil: no converter carries an interface field.
	}
}

// zeroFields returns the paths of the exported fields of v (recursively)
// that hold their zero value.
func zeroFields(v reflect.Value, path string) []string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return []string{path}
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || v.Type() == reflect.TypeOf(time.Time{}) {
		if v.IsZero() || (v.Kind() == reflect.Slice && v.Len() == 0) {
			return []string{path}
		}
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct {
			return zeroFields(v.Index(0), path+"[0]")
		}
		return nil
	}
	var out []string
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() {
			out = append(out, zeroFields(v.Field(i), strings.TrimPrefix(path+"."+f.Name, "."))...)
		}
	}
	return out
}

// checkCarried fails for each zero wire field not in dropped (field path ->
// why it may be zero), and for each dropped entry that is not zero (a stale
// list).
func checkCarried(t *testing.T, name string, wireValue any, dropped map[string]string) {
	t.Helper()
	zero := map[string]bool{}
	for _, p := range zeroFields(reflect.ValueOf(wireValue), "") {
		zero[p] = true
		if _, ok := dropped[p]; !ok {
			t.Errorf("%s: wire field %s is zero with every domain field filled: is it carried? (or list it as dropped, saying why)", name, p)
		}
	}
	for p, why := range dropped {
		if !zero[p] && !strings.HasPrefix(why, mayBeSet) {
			t.Errorf("%s: %s is listed as dropped but is carried: remove it from the list", name, p)
		}
	}
}

// mayBeSet starts the reason of a dropped field whose value does not come
// from the domain value at all, so it may or may not be zero here.
const mayBeSet = "(may be set) "

func filled[T any]() *T {
	v := new(T)
	fillAll(reflect.ValueOf(v))
	return v
}

func TestConvertersCarryEveryField(t *testing.T) {
	for _, tc := range []struct {
		name    string
		convert func() any
		dropped map[string]string
	}{
		{"sessionRow", func() any { return sessionRow(filled[session.ListEntry]()) }, map[string]string{
			"CommandCut": "true only for a command over wire.ListCommandBytes",
		}},
		{"sessionStatus", func() any { return sessionStatus(filled[session.Info]()) }, map[string]string{
			"Unit":  mayBeSet + "read from the worker's cgroup in /proc (launcherOf), not from the domain value",
			"Lease": "the status handler sets it from the session manager's leases (LeaseOf), not from session.Info",
		}},
		{"exitResult", func() any { return exitResult(filled[session.ExitInfo]()) }, nil},
		{"logEvent", func() any { return logEvent(*filled[session.Event]()) }, map[string]string{
			"Name": "the handler sets it (the stream's session), not the event",
		}},
		{"shotResult", func() any { return shotResult(filled[capture.Shot]()) }, nil},
		{"wirePeer", func() any { return wirePeer(*filled[channel.Peer]()) }, nil},
		{"channelRow", func() any { return channelRow(*filled[channel.Row]()) }, nil},
		{"screenResult", func() any { return screenResult(*filled[capture.Info]()) }, nil},
		{"askResult", func() any { return askResult(filled[session.AskResult]()) }, nil},
		{"snapshotResult", func() any { return snapshotResult(filled[session.Snapshot]()) }, nil},
		{"waitResult", func() any { return waitResult(filled[session.WaitResult]()) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkCarried(t, tc.name, tc.convert(), tc.dropped)
		})
	}
}

// TestFillAllFillsEverything: the filler leaves nothing zero, or the
// converter tests would pass on fields it missed.
func TestFillAllFillsEverything(t *testing.T) {
	for _, v := range []any{filled[session.ListEntry](), filled[session.Info](), filled[session.ExitInfo](), filled[session.Event](), filled[capture.Shot](), filled[channel.Peer]()} {
		if z := zeroFields(reflect.ValueOf(v), ""); len(z) > 0 {
			t.Errorf("%T: fillAll left %v zero", v, z)
		}
	}
}

// TestConfigSplitsIntoFixedAndLive: every field of Config is in exactly one
// of fixedConfig and liveConfig, under its own name and type, and split
// carries it (a filled Config leaves nothing zero in either part).
func TestConfigSplitsIntoFixedAndLive(t *testing.T) {
	fixedT, liveT := reflect.TypeOf(fixedConfig{}), reflect.TypeOf(liveConfig{})
	cfgT := reflect.TypeOf(Config{})
	for i := range cfgT.NumField() {
		f := cfgT.Field(i)
		inFixed, okF := fixedT.FieldByName(f.Name)
		inLive, okL := liveT.FieldByName(f.Name)
		switch {
		case okF == okL:
			t.Errorf("Config.%s is in fixedConfig: %v, in liveConfig: %v; want exactly one", f.Name, okF, okL)
		case okF && inFixed.Type != f.Type, okL && inLive.Type != f.Type:
			t.Errorf("Config.%s changes type in the split", f.Name)
		}
	}
	if n := fixedT.NumField() + liveT.NumField(); n != cfgT.NumField() {
		t.Errorf("fixedConfig and liveConfig have %d fields, Config %d", n, cfgT.NumField())
	}
	cfg := filled[Config]()
	cfg.Reload = func() (Config, error) { return Config{}, nil }
	cfg.SetLogLevel = func(string) error { return nil }
	cfg.Hangup = make(chan os.Signal)
	fixed, live := cfg.split()
	checkCarried(t, "split (fixed)", fixed, nil) // Logger has no exported fields: not checked
	checkCarried(t, "split (live)", live, nil)
}
