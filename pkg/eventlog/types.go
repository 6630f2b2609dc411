package eventlog

import "bytes"

// OnlyTypes makes the reader deliver only records of the given types, and
// skip the others without decoding them. A follower of state changes reads
// every record an agent writes, nearly all of them output: finding each
// one's type at the head of its line costs a few bytes' comparison, where
// decoding it costs a pass over its data.
func (r *Reader) OnlyTypes(types ...Type) {
	r.only = types
}

// wanted reports whether line (a whole record) is of a type the reader
// delivers; a line of an unusual shape is decoded and judged then.
func (r *Reader) wanted(line []byte) bool {
	if r.only == nil {
		return true
	}
	t, ok := recordType(line)
	return !ok || r.wantedType(t)
}

// recordType is the type at the head of a record line written by a Writer
// ({"seq":N,"ts":"…","type":"…"}); ok is false for another shape. The
// third field cannot be a string's inside: a string's quotes are escaped.
func recordType(line []byte) (Type, bool) {
	i := bytes.Index(line, []byte(`","type":"`))
	if i < 0 || !bytes.HasPrefix(line, []byte(`{"seq":`)) {
		return "", false
	}
	rest := line[i+len(`","type":"`):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return "", false
	}
	return Type(rest[:end]), true
}

// wantedType reports whether a decoded record's type is delivered.
func (r *Reader) wantedType(t Type) bool {
	if r.only == nil {
		return true
	}
	for _, w := range r.only {
		if t == w {
			return true
		}
	}
	return false
}
