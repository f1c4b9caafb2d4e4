// Package buildinfo says which build of dpsurv is running: the release
// version, the source revision and the Go toolchain, for `dpsurv version`,
// `dpsurv --version` and the dpsurv_build_info metric.
//
// The release build (make build, the Dockerfile) stamps version and
// revision with the linker:
//
//	go build -ldflags "-X github.com/dpsurv/dpsurv/buildinfo.version=0.1.0 \
//	  -X github.com/dpsurv/dpsurv/buildinfo.revision=$(git rev-parse HEAD)"
//
// A plain `go build` or `go run` falls back to the VERSION file embedded in
// the module root package and to the VCS stamp of runtime/debug's build
// information (absent under -buildvcs=false or without .git, then
// "unknown").
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dpsurv/dpsurv"
)

// Set with -ldflags -X; empty in a build that does not stamp them.
var (
	version  string
	revision string
)

// Info is what a binary knows about its own build.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"goversion"`
	// Modified is true when the VCS stamp says the work tree had
	// uncommitted changes (only from the fallback; a stamped release build
	// is clean by construction).
	Modified bool `json:"modified,omitempty"`
}

// Get returns the running binary's build information.
func Get() Info {
	return get(version, revision, debug.ReadBuildInfo)
}

func get(ver, rev string, read func() (*debug.BuildInfo, bool)) Info {
	in := Info{Version: ver, Revision: rev, GoVersion: runtime.Version()}
	if in.Version == "" {
		in.Version = dpsurv.Version()
	}
	if in.Revision == "" {
		in.Revision = "unknown"
		if bi, ok := read(); ok {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					in.Revision = s.Value
				case "vcs.modified":
					in.Modified = s.Value == "true"
				}
			}
		}
	}
	return in
}

// String is the one line `dpsurv --version` prints.
func (in Info) String() string {
	rev := in.Revision
	if in.Modified {
		rev += "-dirty"
	}
	return fmt.Sprintf("dpsurv %s (revision %s, %s)", in.Version, rev, in.GoVersion)
}

// Register adds dpsurv_build_info{version,revision,goversion} 1 to reg,
// the usual build-info gauge: join on it to label any series with the
// running version.
func Register(reg prometheus.Registerer) error {
	in := Get()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dpsurv_build_info",
		Help: "Always 1; the labels say which build is running (version from VERSION, source revision, Go toolchain)."},
		[]string{"version", "revision", "goversion"})
	g.WithLabelValues(in.Version, in.Revision, in.GoVersion).Set(1)
	return reg.Register(g)
}
