package desktop

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// cookieName is the one authorization protocol desktops use.
const cookieName = "MIT-MAGIC-COOKIE-1"

// familyWild matches any address in an Xauthority entry; with an empty
// display number it matches any display, so the file stays right whatever
// number the server ends up with.
const familyWild = 0xffff

// writeAuthority creates path (0600, never through a link, never over an
// existing file) holding one MIT-MAGIC-COOKIE-1 entry with a fresh cookie.
func writeAuthority(path string) ([]byte, error) {
	cookie := make([]byte, 16)
	if _, err := rand.Read(cookie); err != nil {
		return nil, fmt.Errorf("cookie: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cookie file: %w", err)
	}
	_, err = f.Write(authorityEntry(cookie))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("cookie file: %w", err)
	}
	return cookie, nil
}

func authorityEntry(cookie []byte) []byte {
	var b []byte
	field := func(v []byte) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
		b = append(b, v...)
	}
	b = binary.BigEndian.AppendUint16(b, familyWild)
	field(nil) // address: any
	field(nil) // display number: any
	field([]byte(cookieName))
	field(cookie)
	return b
}

// readCookie returns the cookie of the file writeAuthority wrote.
func readCookie(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := f.Read(b)
	b = b[:n]
	var fields [][]byte
	if len(b) < 2 {
		return nil, errors.New("cookie file is empty")
	}
	b = b[2:]
	for range 4 {
		if len(b) < 2 {
			return nil, errors.New("cookie file is truncated")
		}
		l := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+l {
			return nil, errors.New("cookie file is truncated")
		}
		fields = append(fields, b[2:2+l])
		b = b[2+l:]
	}
	if string(fields[2]) != cookieName || len(fields[3]) != 16 {
		return nil, errors.New("cookie file holds no MIT-MAGIC-COOKIE-1")
	}
	return fields[3], nil
}
