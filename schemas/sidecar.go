package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/apache/arrow/go/v15/arrow"
)

// SidecarPath is where a CSV or JSON-lines file written by FileWriter keeps
// its schema metadata (the mechanism, epsilon and guarantee of each
// sanitized field): the file's path with ".meta.json" appended.
func SidecarPath(path string) string { return path + ".meta.json" }

// Sidecar is the JSON of a sidecar file: the schema-level metadata and each
// column's field metadata, by output column name. It holds public
// parameters only.
type Sidecar struct {
	Schema map[string]string            `json:"schema,omitempty"`
	Fields map[string]map[string]string `json:"fields"`
}

func metadataMap(md arrow.Metadata) map[string]string {
	if md.Len() == 0 {
		return nil
	}
	m := make(map[string]string, md.Len())
	for i, k := range md.Keys() {
		m[k] = md.Values()[i]
	}
	return m
}

// writeSidecar writes the sidecar of a text file when its schema carries
// metadata, and removes a stale one otherwise.
func writeSidecar(path string, sc *arrow.Schema) error {
	sd := Sidecar{Schema: metadataMap(sc.Metadata()), Fields: map[string]map[string]string{}}
	for _, f := range sc.Fields() {
		if m := metadataMap(f.Metadata); m != nil {
			sd.Fields[f.Name] = m
		}
	}
	if sd.Schema == nil && len(sd.Fields) == 0 {
		if err := os.Remove(SidecarPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale metadata file: %w", err)
		}
		return nil
	}
	b, err := json.MarshalIndent(sd, "", "  ")
	if err != nil {
		return fmt.Errorf("encode metadata file: %w", err)
	}
	if err := os.WriteFile(SidecarPath(path), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write metadata file: %w", err)
	}
	return nil
}

// ReadSidecar reads the sidecar of a CSV or JSON-lines file; ok is false
// when the file has none.
func ReadSidecar(path string) (sd Sidecar, ok bool, err error) {
	b, err := os.ReadFile(SidecarPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return Sidecar{}, false, nil
	}
	if err != nil {
		return Sidecar{}, false, fmt.Errorf("read metadata file: %w", err)
	}
	if err := json.Unmarshal(b, &sd); err != nil {
		return Sidecar{}, false, fmt.Errorf("decode metadata file %s: %w", SidecarPath(path), err)
	}
	return sd, true, nil
}
