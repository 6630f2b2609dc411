// Package eventlog is a session's event log on disk: one JSON record per
// line (events.jsonl, and events.jsonl.1 before the last rotation),
// appended by the session's worker (Writer: rotation under a cap, a torn
// last line cut on open, gaps recorded when the disk refuses records) and
// read by the daemon (Reader: from a seq or a time, across rotation,
// resumable for follows; LastSeq; RuneJoiner for readers that want whole
// characters). It knows nothing of workers or the wire; pkg/session's doc
// describes the record format and the full-disk rules, which are this
// package's behaviour.
package eventlog
