//go:build amd64.v3

package cpu

// With GOAMD64=v3 the compiler fuses c += a·b into FMA instructions, which
// need no temporary registers, so a kernel with twelve accumulators fits:
// about 21 GFLOP/s on two Zen 5 cores against 20 for the 2×4 kernel.
// Results differ from a GOAMD64=v1 build within rounding (fused products
// are not rounded), and are as deterministic.
func init() {
	for _, k := range kernelsF32 {
		if k.name == "go2x6" {
			kernelF32 = k
		}
	}
}
