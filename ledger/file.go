package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"
)

// File is the file-mode Backend: one JSON line per entry, appended and
// fsynced before Append returns. Open loads every complete line; a torn last
// line (the process died mid-write) is cut off, any other malformed line is
// an error (the ledger is never silently reset). The file is locked
// exclusively while open, so two processes cannot share it.
type File struct {
	mu   sync.Mutex
	f    *os.File
	path string
	size int64
	log  *zap.Logger
}

// OpenFile opens (creating if needed, mode 0600) the ledger file at path.
func OpenFile(path string, log *zap.Logger) (*File, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if path == "" {
		return nil, errors.New("open ledger file: empty path")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open ledger file: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open ledger file %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, fmt.Errorf("open ledger file: %w", err)
	}
	return &File{f: f, path: path, log: log}, nil
}

// Load implements Backend.
func (b *File) Load(context.Context) ([]Entry, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("load ledger file: %w", err)
	}
	data, err := io.ReadAll(b.f)
	if err != nil {
		return nil, fmt.Errorf("load ledger file: %w", err)
	}
	var out []Entry
	good := 0
	for line := 1; good < len(data); line++ {
		nl := bytes.IndexByte(data[good:], '\n')
		if nl < 0 {
			// A torn last line: the append that wrote it never returned,
			// so nothing was published from it.
			b.log.Warn("ledger file ends with an incomplete entry; cutting it off",
				zap.String("path", b.path), zap.Int("bytes", len(data)-good))
			if err := b.f.Truncate(int64(good)); err != nil {
				return nil, fmt.Errorf("load ledger file: truncate torn entry: %w", err)
			}
			if err := b.f.Sync(); err != nil {
				return nil, fmt.Errorf("load ledger file: %w", err)
			}
			break
		}
		var e Entry
		if err := json.Unmarshal(data[good:good+nl], &e); err != nil {
			return nil, fmt.Errorf("load ledger file %s: line %d: %w", b.path, line, err)
		}
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("load ledger file %s: line %d: %w", b.path, line, err)
		}
		out = append(out, e)
		good += nl + 1
	}
	b.size = int64(good)
	return out, nil
}

// Append implements Backend: write one line at the end, fsync.
func (b *File) Append(_ context.Context, e Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("append ledger entry: %w", err)
	}
	line = append(line, '\n')
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.f.WriteAt(line, b.size); err != nil {
		_ = b.f.Truncate(b.size) // best effort: no torn line left behind
		return fmt.Errorf("append ledger entry: %w", err)
	}
	if err := b.f.Sync(); err != nil {
		_ = b.f.Truncate(b.size)
		return fmt.Errorf("append ledger entry: fsync: %w", err)
	}
	b.size += int64(len(line))
	return nil
}

// Close implements Backend (and releases the lock).
func (b *File) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.f == nil {
		return nil
	}
	err := b.f.Close()
	b.f = nil
	if err != nil {
		return fmt.Errorf("close ledger file: %w", err)
	}
	return nil
}

// FileState is the file-mode StateStore: Save writes a temporary file,
// fsyncs it and renames it over the snapshot, so a crash leaves either the
// old or the new snapshot, never a mix.
type FileState struct {
	path string
	lock *os.File
}

// OpenFileState returns the state store at path (locked by a sibling
// path+".lock" file while open).
func OpenFileState(path string) (*FileState, error) {
	if path == "" {
		return nil, errors.New("open state file: empty path")
	}
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open state file: %w", err)
	}
	if err := lockFile(lf); err != nil {
		lf.Close()
		return nil, fmt.Errorf("open state file %s: %w", path, err)
	}
	return &FileState{path: path, lock: lf}, nil
}

// Load implements StateStore.
func (s *FileState) Load(context.Context) ([]byte, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load state file: %w", err)
	}
	return data, nil
}

// Save implements StateStore.
func (s *FileState) Save(_ context.Context, data []byte) error {
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("save state file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("save state file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("save state file: fsync: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save state file: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("save state file: %w", err)
	}
	if err := syncDir(filepath.Dir(s.path)); err != nil {
		return fmt.Errorf("save state file: %w", err)
	}
	return nil
}

// Close implements StateStore.
func (s *FileState) Close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close()
	s.lock = nil
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("fsync dir: %w", err)
	}
	return nil
}
