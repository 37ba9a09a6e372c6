package workbench_test

import (
	"os"
	"testing"

	"github.com/kiln-ml/kiln/train"
)

// TestMain turns the run registry off for the package's tests (and the
// kernels and training processes they start), so that they never touch
// the user's registry and every test sees only the runs it made; the tests
// of the registry give it a temporary directory of their own.
func TestMain(m *testing.M) {
	os.Setenv(train.RegistryEnv, "off")
	os.Exit(m.Run())
}
