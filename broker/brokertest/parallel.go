package brokertest

import (
	"flag"
	"strconv"
)

// WaitBound is how many tests calling t.Parallel run at once in a package
// that calls WaitBoundParallel.
const WaitBound = 8

// WaitBoundParallel, called from TestMain before m.Run, lets WaitBound
// tests that call t.Parallel run at once instead of GOMAXPROCS (go test's
// default, 2 on the CI machine), unless -parallel was given. It is for
// packages whose tests mostly wait — on a broker round trip, a session or
// stall timeout, an idle reader — so that they overlap their waiting
// rather than queue for a core they barely use. Each such test runs on its
// own cluster (Start), so they share nothing.
func WaitBoundParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(WaitBound))
	}
}
