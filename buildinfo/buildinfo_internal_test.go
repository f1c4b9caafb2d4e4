package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/dpsurv/dpsurv"
)

// Without linker stamps the version is the VERSION file's and the revision
// the VCS stamp of the build information, or "unknown" without one.
func TestFallbacks(t *testing.T) {
	vcs := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name          string
		ver, rev      string
		read          func() (*debug.BuildInfo, bool)
		want          Info
		wantLineAfter string
	}{
		{"stamped", "9.9.9", "deadbeef", vcs, Info{Version: "9.9.9", Revision: "deadbeef", GoVersion: runtime.Version()}, "dpsurv 9.9.9 (revision deadbeef, " + runtime.Version() + ")"},
		{"vcs fallback", "", "", vcs, Info{Version: dpsurv.Version(), Revision: "abc123", GoVersion: runtime.Version(), Modified: true}, "dpsurv " + dpsurv.Version() + " (revision abc123-dirty, " + runtime.Version() + ")"},
		{"no vcs", "", "", none, Info{Version: dpsurv.Version(), Revision: "unknown", GoVersion: runtime.Version()}, "dpsurv " + dpsurv.Version() + " (revision unknown, " + runtime.Version() + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := get(tc.ver, tc.rev, tc.read)
			if got != tc.want {
				t.Errorf("get = %+v, want %+v", got, tc.want)
			}
			if got.String() != tc.wantLineAfter {
				t.Errorf("String = %q, want %q", got.String(), tc.wantLineAfter)
			}
		})
	}
}
