package schemas_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsurv/dpsurv/schemas/schemastest"
)

// TestAdversarialGoldensMatchGenerators: the messages of the adversarial
// table kept in schemastest/testdata (read by the tests that use them,
// instead of each test regenerating them: seconds under -race) are the
// bytes their generators produce. DPSURV_UPDATE_GOLDEN=1 rewrites them
// after a generator change.
func TestAdversarialGoldensMatchGenerators(t *testing.T) {
	update := os.Getenv("DPSURV_UPDATE_GOLDEN") == "1"
	for name, gen := range schemastest.GoldenFiles {
		got := gen(t)
		if update {
			if err := os.WriteFile(filepath.Join("schemastest", "testdata", name), got, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s (%d bytes)", name, len(got))
			continue
		}
		if want := schemastest.Golden(t, name); !bytes.Equal(got, want) {
			t.Errorf("schemastest/testdata/%s (%d bytes) is not what its generator writes (%d bytes): rerun this test with DPSURV_UPDATE_GOLDEN=1", name, len(want), len(got))
		}
	}
}
