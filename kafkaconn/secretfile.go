package kafkaconn

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrSecretFileMode is returned for a secret file that others may read.
var ErrSecretFileMode = errors.New("secret file is readable by others")

// ReadSecretFile reads a secret (a key or a password) from path: a regular
// file (a device such as /dev/zero, a FIFO or a directory is refused
// before anything is read) of at most max bytes, read through a bounded
// reader. A file that its group may access is refused unless allowGroup
// (a Kubernetes Secret volume with fsGroup is mode 0440); a file any other
// user may access is always refused.
func ReadSecretFile(path string, max int64, allowGroup bool) ([]byte, error) {
	return ReadRegularFile(path, max, func(st os.FileInfo) error {
		perm := st.Mode().Perm()
		switch {
		case perm&0o007 != 0:
			return fmt.Errorf("%s has mode %04o: %w (chmod o-rwx it)", path, perm, ErrSecretFileMode)
		case perm&0o070 != 0 && !allowGroup:
			return fmt.Errorf("%s has mode %04o: %w (chmod 600 it, or allow a group-readable file in the config)", path, perm, ErrSecretFileMode)
		case st.Size() > max:
			return fmt.Errorf("%s has %d bytes, more than the %d a secret may have", path, st.Size(), max)
		}
		return nil
	})
}

// readSecretLine reads a one-line secret (a password, a client secret)
// with ReadSecretFile and trims its line ending; errors name the config
// field, and an empty secret is one.
func readSecretLine(field, path string, max int64, allowGroup bool) (string, error) {
	b, err := ReadSecretFile(path, max, allowGroup)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", fmt.Errorf("%s: %s is empty", field, path)
	}
	return s, nil
}

// ReadRegularFile reads a regular file of at most max bytes (a device such
// as /dev/zero, a FIFO or a directory is refused before anything is read)
// through a bounded reader; check, when not nil, vets the open file's
// FileInfo first.
func ReadRegularFile(path string, max int64, check func(os.FileInfo) error) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	if check != nil {
		if err := check(st); err != nil {
			return nil, err
		}
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s has %d bytes, more than the limit of %d", path, st.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s has more than %d bytes", path, max)
	}
	return b, nil
}
