package capture

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The screen record: with Options.RecordScreen, every act batch's
// observation is kept as an image file in screen/ beside the audit log and
// named in the batch's audit record; WriteRecord turns the audit log and
// those images into a directory a person opens in a browser to see what
// agents did on their screen. The images are bounded by a byte cap, oldest
// dropped first, so a busy agent cannot fill the disk.

// DefaultRecordScreenMaxBytes caps the kept observations when Options leave
// it zero: a few thousand screenshots of a desktop.
const DefaultRecordScreenMaxBytes = 256 << 20

// shotStore keeps observation images in one directory, oldest removed
// first past max bytes.
type shotStore struct {
	mu    sync.Mutex
	dir   string
	max   int64
	total int64
	files []storedShot      // oldest first
	last  map[string]string // caller key → its last kept file, for unchanged observations
	seq   uint64            // disambiguates files kept within one nanosecond
	sizes map[string]int64  // file → size, for files still kept
}

type storedShot struct {
	name string
	size int64
}

// openShotStore opens (creating 0700) dir and counts what it holds.
func openShotStore(dir string, max int64) (*shotStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("screen record: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("screen record: %s is not a directory; remove it", dir)
	}
	s := &shotStore{dir: dir, max: max, last: map[string]string{}, sizes: map[string]int64{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("screen record: %w", err)
	}
	for _, e := range entries { // ReadDir sorts by name, and names sort by time
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			s.files = append(s.files, storedShot{e.Name(), info.Size()})
			s.sizes[e.Name()] = info.Size()
			s.total += info.Size()
		}
	}
	return s, nil
}

// keep stores the image of an observation and returns its file name, or ""
// when there is no image to keep. An unchanged observation names the
// caller's previous image.
func (s *shotStore) keep(callerKey string, shot *Shot) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if shot.Unchanged {
		if name, ok := s.last[callerKey]; ok {
			if _, still := s.sizes[name]; still {
				return name, nil
			}
		}
		return "", nil
	}
	data := shot.Data
	if data == nil && shot.Path != "" {
		b, err := os.ReadFile(shot.Path)
		if err != nil {
			return "", fmt.Errorf("screen record: reading the observation back from %s: %w", shot.Path, err)
		}
		data = b
	}
	if len(data) == 0 {
		return "", nil
	}
	ext := "png"
	if shot.Format == FormatJPEG {
		ext = "jpg"
	}
	s.seq++
	name := fmt.Sprintf("%020d-%04d.%s", time.Now().UnixNano(), s.seq%10000, ext)
	f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", fmt.Errorf("screen record: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(filepath.Join(s.dir, name))
		return "", fmt.Errorf("screen record: %w", err)
	}
	s.files = append(s.files, storedShot{name, int64(len(data))})
	s.sizes[name] = int64(len(data))
	s.total += int64(len(data))
	s.last[callerKey] = name
	// Past the cap the oldest go, but never the image just kept.
	for s.total > s.max && len(s.files) > 1 {
		old := s.files[0]
		s.files = s.files[1:]
		os.Remove(filepath.Join(s.dir, old.name))
		delete(s.sizes, old.name)
		s.total -= old.size
	}
	return name, nil
}

// has reports whether the store still holds name.
func (s *shotStore) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sizes[name]
	return ok
}

// SetRecordScreen turns keeping observations on or off, e.g. after a
// config reload. It fails when the record's directory cannot be opened.
func (s *Screen) SetRecordScreen(on bool) error {
	if on {
		if err := s.openShots(); err != nil {
			return err
		}
	}
	s.recordScreen.Store(on)
	return nil
}

// openShots opens the store beside the audit log once.
func (s *Screen) openShots() error {
	s.shotsMu.Lock()
	defer s.shotsMu.Unlock()
	if s.shots != nil {
		return nil
	}
	if s.opts.AuditPath == "" {
		return errors.New("screen record: there is no audit log to keep observations beside")
	}
	max := s.opts.RecordScreenMaxBytes
	if max <= 0 {
		max = DefaultRecordScreenMaxBytes
	}
	dir := filepath.Join(filepath.Dir(s.opts.AuditPath), "screen")
	if s.recDir != "" {
		dir = s.recDir
	}
	st, err := openShotStore(dir, max)
	if err != nil {
		return err
	}
	s.shots = st
	return nil
}

// keepObservation stores a batch's observation in its audit record when
// the screen is recorded.
func (s *Screen) keepObservation(rec *AuditRecord, callerKey string, shot *Shot) {
	if shot == nil || !s.recording() {
		return
	}
	if s.person != nil {
		if err := s.openShots(); err != nil {
			s.log.Warn().Err(err).Msg("observation not kept")
			return
		}
	}
	s.shotsMu.Lock()
	store := s.shots
	s.shotsMu.Unlock()
	if store == nil {
		return
	}
	name, err := store.keep(callerKey, shot)
	if err != nil {
		s.log.Warn().Err(err).Msg("observation not kept")
		return
	}
	rec.Observation = name
}

// RecordRequest asks for a screen record.
type RecordRequest struct {
	// Dir is the absolute directory written: index.html and the images,
	// numbered by batch. An existing non-empty directory is refused unless
	// Overwrite, and a symbolic link always.
	Dir       string
	Overwrite bool
	// Since and Until bound the batches' times; zero means unbounded.
	Since, Until time.Time
}

// RecordResult says what a screen record holds.
type RecordResult struct {
	Dir     string `json:"dir"`
	Batches int    `json:"batches"`
	Images  int    `json:"images"`
	// Skipped counts audit lines that could not be read (a line torn by
	// a crash), which are left out.
	Skipped int `json:"skipped,omitempty"`
}

// WriteRecord writes the audit log's batches between req.Since and
// req.Until, with the observations still kept, as a static page a person
// steps through in a browser: index.html beside the numbered images.
// Errors wrap ErrInvalid for a bad request.
func (s *Screen) WriteRecord(req RecordRequest) (*RecordResult, error) {
	if err := checkRecordDir(req); err != nil {
		return nil, err
	}
	if !req.Since.IsZero() && !req.Until.IsZero() && req.Since.After(req.Until) {
		return nil, invalidf("since %s is after until %s; swap them", req.Since.Format(time.RFC3339), req.Until.Format(time.RFC3339))
	}
	if s.opts.AuditPath == "" {
		return nil, invalidf("this screen keeps no audit log, so there is nothing to record")
	}
	var recs []AuditRecord
	skipped := 0
	for _, p := range []string{s.opts.AuditPath + ".1", s.opts.AuditPath} {
		r, bad, err := readAudit(p)
		if err != nil {
			return nil, err
		}
		recs, skipped = append(recs, r...), skipped+bad
	}
	recs = slices.DeleteFunc(recs, func(r AuditRecord) bool {
		return r.Desktop != s.desktop || (!req.Since.IsZero() && r.Time.Before(req.Since)) || (!req.Until.IsZero() && r.Time.After(req.Until))
	})
	slices.SortStableFunc(recs, func(a, b AuditRecord) int { return a.Time.Compare(b.Time) })
	if err := os.MkdirAll(req.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("screen record: %w", err)
	}
	s.shotsMu.Lock()
	store := s.shots
	s.shotsMu.Unlock()
	res := &RecordResult{Dir: req.Dir, Batches: len(recs), Skipped: skipped}
	page := recordPage{Since: req.Since, Until: req.Until}
	for i, r := range recs {
		b := recordBatch{Number: i + 1, Record: r}
		switch {
		case r.Observation == "":
			b.Note = "no observation"
		case store == nil || !store.has(r.Observation):
			b.Note = "the observation was dropped by the record's size cap"
		default:
			name := fmt.Sprintf("%04d%s", i+1, filepath.Ext(r.Observation))
			if err := copyFile(filepath.Join(store.dir, r.Observation), filepath.Join(req.Dir, name)); err != nil {
				b.Note = "the observation could not be copied: " + err.Error()
				break
			}
			b.Image = name
			res.Images++
		}
		page.Batches = append(page.Batches, b)
	}
	f, err := os.OpenFile(filepath.Join(req.Dir, "index.html"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("screen record: %w", err)
	}
	err = recordTemplate.Execute(f, page)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("screen record: writing index.html: %w", err)
	}
	return res, nil
}

// checkRecordDir refuses a relative path, a link, a file, and a directory
// with something in it unless overwrite.
func checkRecordDir(req RecordRequest) error {
	if req.Dir == "" || !filepath.IsAbs(req.Dir) {
		return invalidf("record directory %q must be an absolute path", req.Dir)
	}
	st, err := os.Lstat(req.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return invalidf("record directory %s: %v", req.Dir, err)
	case st.Mode()&os.ModeSymlink != 0:
		return invalidf("record directory %s is a symbolic link; give the real path", req.Dir)
	case !st.IsDir():
		return invalidf("%s exists and is not a directory; give a new directory", req.Dir)
	}
	entries, err := os.ReadDir(req.Dir)
	if err != nil {
		return invalidf("record directory %s: %v", req.Dir, err)
	}
	if len(entries) > 0 && !req.Overwrite {
		return invalidf("record directory %s is not empty; give a new one or pass overwrite (--force)", req.Dir)
	}
	return nil
}

// readAudit reads one audit file; a missing file holds no records, and
// lines that do not parse are counted, not fatal.
func readAudit(path string) ([]AuditRecord, int, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("screen record: %w", err)
	}
	defer f.Close()
	var recs []AuditRecord
	bad := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r AuditRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			bad++
			continue
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("screen record: reading %s: %w", path, err)
	}
	return recs, bad, nil
}

func copyFile(from, to string) error {
	in, err := os.OpenFile(from, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

type recordPage struct {
	Since, Until time.Time
	Batches      []recordBatch
}

type recordBatch struct {
	Number int
	Record AuditRecord
	Image  string
	Note   string
}

// describe says what an audited action did, in a person's words.
func describe(a AuditAction) string {
	var b strings.Builder
	b.WriteString(a.Kind)
	if a.X != nil && a.Y != nil {
		fmt.Fprintf(&b, " at %d,%d", *a.X, *a.Y)
	}
	if a.Button != "" {
		fmt.Fprintf(&b, " %s button", a.Button)
	}
	if a.Key != "" {
		fmt.Fprintf(&b, " %s", strings.Join(append(slices.Clone(a.Modifiers), a.Key), "+"))
	}
	if a.Chars > 0 {
		fmt.Fprintf(&b, " %d characters", a.Chars)
	}
	if a.Direction != "" {
		fmt.Fprintf(&b, " %s by %d", a.Direction, a.Amount)
	}
	if a.MS > 0 {
		fmt.Fprintf(&b, " %d ms", a.MS)
	}
	if a.Application != "" {
		fmt.Fprintf(&b, " %q", a.Application)
	}
	return b.String()
}

// recordTemplate is the page: one section per batch, its image beside its
// actions, with links to step back and forth; no script, no server.
var recordTemplate = template.Must(template.New("record").Funcs(template.FuncMap{
	"describe": describe,
	"when":     func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05.000") },
	"prev":     func(n int) int { return n - 1 },
	"next":     func(n int) int { return n + 1 },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>agentd screen record</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 0; background: #1e1e1e; color: #ddd; }
header { padding: 8px 16px; background: #111; }
section { display: flex; gap: 16px; padding: 16px; min-height: 90vh; border-bottom: 1px solid #333; }
section img { max-width: 75vw; max-height: 85vh; border: 1px solid #444; background: #000; }
.side { min-width: 18em; }
.outcome-ok { color: #7c7; } .outcome { color: #e77; }
a { color: #8af; }
</style></head>
<body>
<header>agentd screen record: {{len .Batches}} batches{{if not .Since.IsZero}} since {{when .Since}}{{end}}{{if not .Until.IsZero}} until {{when .Until}}{{end}}</header>
{{if not .Batches}}<p style="padding:16px">No batches in this period.</p>{{end}}
{{range $i, $b := .Batches}}<section id="b{{$b.Number}}">
{{if $b.Image}}<img src="{{$b.Image}}" alt="the screen after batch {{$b.Number}}">{{else}}<p class="noimage">{{$b.Note}}</p>{{end}}
<div class="side">
<h2>Batch {{$b.Number}}</h2>
<p>{{when $b.Record.Time}} · {{printf "%.0f" $b.Record.Duration}} ms · <span class="{{if eq $b.Record.Outcome "ok"}}outcome-ok{{else}}outcome{{end}}">{{$b.Record.Outcome}}</span>{{if $b.Record.Message}}: {{$b.Record.Message}}{{end}}</p>
<ol>{{range $b.Record.Actions}}<li>{{describe .}}</li>{{end}}</ol>
<p>{{if gt $b.Number 1}}<a href="#b{{prev $b.Number}}">← previous</a>{{end}} {{if lt $b.Number (len $.Batches)}}<a href="#b{{next $b.Number}}">next →</a>{{end}}</p>
</div>
</section>
{{end}}</body></html>
`))
