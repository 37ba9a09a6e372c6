package dist

import (
	"os"
	"strings"
	"testing"
)

// unsetLauncher removes every launcher variable for the test, restoring
// them afterwards.
func unsetLauncher(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OMPI_") || strings.HasPrefix(k, "PMIX_") || strings.HasPrefix(k, "SLURM_") {
			t.Setenv(k, v) // registers the restore
			os.Unsetenv(k)
		}
	}
}
