package tensor_test

import (
	"testing"

	"github.com/kiln-ml/kiln/internal/testutil"
	"github.com/kiln-ml/kiln/tensor"
)

// The shared harness (internal/testutil) under the short names the tensor
// tests use.
var (
	forEachDevice = testutil.ForEachDevice
	gradCheck     = testutil.GradCheck
	randFloat64   = testutil.RandFloat64
	loadFixtures  = testutil.LoadFixtures
	assertClose   = testutil.AssertClose
	assertValues  = testutil.AssertValues
)

type (
	fixtureTensor = testutil.Fixture
	fixtureCase   = testutil.FixtureCase
)

// gradCase is one table entry for runGradCases: f applied to inputs built on dev.
type gradCase struct {
	name   string
	f      func(in []*tensor.Tensor) *tensor.Tensor
	inputs func(dev tensor.Device) []*tensor.Tensor
}

// runGradCases runs gradCheck for each case on every test device.
func runGradCases(t *testing.T, cases []gradCase) {
	t.Helper()
	tc := make([]testutil.GradCase, len(cases))
	for i, c := range cases {
		tc[i] = testutil.GradCase{Name: c.name, F: c.f, Inputs: c.inputs}
	}
	testutil.RunGradCases(t, tc)
}
