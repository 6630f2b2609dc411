package rpc

import "encoding/json"

// decodeRequestFast reads the usual request, {"id":N,"method":"...",
// "params":{...}} in any order with plain ASCII keys and method, without
// reflection; ok is false for anything else (escapes, unknown or repeated
// keys, other key spellings, an id that is not a plain integer of at least
// 1, params that are not an object, trailing data), which DecodeRequest
// then reads the slow, strict way. Whatever it accepts, the slow way
// decodes to the same Request: it is a shortcut, not a second grammar.
// (encoding/json was a fifth of agent.hello's time in the daemon.)
func decodeRequestFast(body []byte) (req *Request, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	var r Request
	var seen [3]bool // id, method, params
	i = skipSpace(body, i+1)
	for n := 0; ; n++ {
		if i < len(body) && body[i] == '}' && n == 0 {
			return nil, false // {}: the slow way names what is missing
		}
		key, j, ok := plainString(body, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(body, j)
		if i >= len(body) || body[i] != ':' {
			return nil, false
		}
		i = skipSpace(body, i+1)
		switch key {
		case "id":
			if seen[0] {
				return nil, false
			}
			seen[0] = true
			if r.ID, i, ok = plainUint(body, i); !ok {
				return nil, false
			}
		case "method":
			if seen[1] {
				return nil, false
			}
			seen[1] = true
			if r.Method, i, ok = plainString(body, i); !ok {
				return nil, false
			}
		case "params":
			if seen[2] {
				return nil, false
			}
			seen[2] = true
			end, ok := objectEnd(body, i)
			if !ok || !json.Valid(body[i:end]) {
				return nil, false
			}
			r.Params, i = body[i:end:end], end
		default:
			return nil, false
		}
		i = skipSpace(body, i)
		if i < len(body) && body[i] == ',' {
			i = skipSpace(body, i+1)
			continue
		}
		if i >= len(body) || body[i] != '}' {
			return nil, false
		}
		if skipSpace(body, i+1) != len(body) || !seen[0] || !seen[1] {
			return nil, false
		}
		return &r, true
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string of printable ASCII without escapes at
// b[i], returning it and the index after it.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return "", i, false
		}
	}
	return "", i, false
}

// plainUint reads a JSON integer from 1 to 2^64-1 without sign, fraction
// or exponent at b[i].
func plainUint(b []byte, i int) (uint64, int, bool) {
	j := i
	var v uint64
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		d := uint64(b[j] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, i, false // overflow: the slow way says so
		}
		v = v*10 + d
		j++
	}
	if j == i || v == 0 || b[i] == '0' {
		return 0, i, false
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return 0, i, false
	}
	return v, j, true
}

// objectEnd finds the end of the JSON object at b[i] by its braces,
// skipping strings; json.Valid then checks what is inside.
func objectEnd(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return i, false
}
