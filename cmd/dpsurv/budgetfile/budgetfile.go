package budgetfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Version is the file format version.
const Version = 1

// Release is one charged release.
type Release struct {
	Time    string  `json:"time"`    // RFC 3339, UTC
	Command string  `json:"command"` // e.g. "fit km --method hierarchical"
	Input   string  `json:"input"`   // the input's base name when charged
	Epsilon float64 `json:"epsilon"`
}

// Entry is the account of one input.
type Entry struct {
	Total    float64   `json:"total"`
	Spent    float64   `json:"spent"`
	Releases []Release `json:"releases"`
}

// Remaining is Total - Spent, at least 0.
func (e Entry) Remaining() float64 { return math.Max(e.Total-e.Spent, 0) }

// Doc is the file's content.
type Doc struct {
	Version int               `json:"version"`
	Inputs  map[string]*Entry `json:"inputs"` // by fingerprint
}

// ErrExhausted marks a refused release.
var ErrExhausted = errors.New("privacy budget exhausted")

// Fingerprint returns "sha256:HEX" of the file's bytes.
func Fingerprint(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", filepath.Base(path), err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Charge is one release to record.
type Charge struct {
	Fingerprint string
	Input       string  // base name, for people reading the file
	Command     string  // what released
	Epsilon     float64 // > 0
	// Total is the budget stated for the input (--budget-total), or 0 for
	// the total already recorded. A first charge of an input needs it; a
	// later one may only repeat the recorded total.
	Total float64
	Now   time.Time
}

// epsTol absorbs float rounding in the comparison against the total.
const epsTol = 1e-9

// exhausted builds the refusal.
func exhausted(c Charge, e Entry) error {
	return fmt.Errorf("%w for input %s (%s): spent %g, requested %g, total %g (remaining %g); "+
		"each private release adds its epsilon; the total is the data holder's to change in the budget file",
		ErrExhausted, c.Input, c.Fingerprint, e.Spent, c.Epsilon, e.Total, e.Remaining())
}

// entryFor checks c against d and returns the input's entry (a new one
// when the input is not yet recorded).
func entryFor(d *Doc, c Charge) (*Entry, error) {
	if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) {
		return nil, fmt.Errorf("budget file: epsilon must be positive and finite, got %v", c.Epsilon)
	}
	if c.Total < 0 || math.IsNaN(c.Total) || math.IsInf(c.Total, 0) {
		return nil, fmt.Errorf("budget file: --budget-total must be a positive number, got %v", c.Total)
	}
	e := d.Inputs[c.Fingerprint]
	if e == nil {
		if c.Total == 0 {
			return nil, fmt.Errorf("budget file: input %s (%s) has no recorded total: state it with --budget-total", c.Input, c.Fingerprint)
		}
		e = &Entry{Total: c.Total}
	} else if c.Total != 0 && c.Total != e.Total {
		return nil, fmt.Errorf("budget file: input %s has the recorded total %g; --budget-total %g differs "+
			"(the total is changed by editing the budget file, deliberately, not by a fit)", c.Input, e.Total, c.Total)
	}
	if e.Spent+c.Epsilon > e.Total+epsTol {
		return nil, exhausted(c, *e)
	}
	return e, nil
}

// Check reports whether c could be charged now, without recording it (a
// fit checks before its work and charges after it, before printing).
func Check(path string, c Charge) (Entry, error) {
	return withEntry(path, c, func(Doc, *Entry) error { return nil })
}

// Spend records c and returns the input's account after it, or refuses
// (ErrExhausted, nothing recorded) when it would pass the total.
func Spend(path string, c Charge) (Entry, error) {
	return withEntry(path, c, func(d Doc, e *Entry) error {
		now := c.Now
		if now.IsZero() {
			now = time.Now()
		}
		e.Spent += c.Epsilon
		e.Releases = append(e.Releases, Release{Time: now.UTC().Format(time.RFC3339), Command: c.Command, Input: c.Input, Epsilon: c.Epsilon})
		d.Inputs[c.Fingerprint] = e
		return write(path, d)
	})
}

// withEntry runs f, under the file's lock, on the file's content and the
// input's account that c may be charged to (entryFor's checks passed),
// and returns the account as f left it.
func withEntry(path string, c Charge, f func(d Doc, e *Entry) error) (Entry, error) {
	var out Entry
	err := withLock(path, func() error {
		d, err := read(path)
		if err != nil {
			return err
		}
		e, err := entryFor(&d, c)
		if err != nil {
			return err
		}
		if err := f(d, e); err != nil {
			return err
		}
		out = *e
		return nil
	})
	return out, err
}

// Read returns the file's content (an empty document when it does not
// exist).
func Read(path string) (Doc, error) { return read(path) }

func read(path string) (Doc, error) {
	d := Doc{Version: Version, Inputs: map[string]*Entry{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("budget file: %w", err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("budget file %s: not a dpsurv budget file (%v); refusing to overwrite it", path, err)
	}
	if d.Version != Version {
		return d, fmt.Errorf("budget file %s: version %d, want %d", path, d.Version, Version)
	}
	if d.Inputs == nil {
		d.Inputs = map[string]*Entry{}
	}
	return d, nil
}

// write replaces path with d atomically.
func write(path string, d Doc) (err error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("budget file: encode: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("budget file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("budget file: write: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("budget file: sync: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("budget file: close: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("budget file: replace: %w", err)
	}
	if dh, derr := os.Open(dir); derr == nil {
		_ = dh.Sync() // the rename's directory entry; best effort where unsupported
		dh.Close()
	}
	return nil
}

// withLock runs f holding the exclusive lock of path.
func withLock(path string, f func() error) error {
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("budget file lock: %w", err)
	}
	defer lf.Close()
	if err := lock(lf); err != nil {
		return fmt.Errorf("budget file lock %s: %w", path+".lock", err)
	}
	defer unlock(lf)
	return f()
}
