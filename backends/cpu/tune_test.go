package cpu

import (
	"fmt"
	"os"
)

func init() {
	if s := os.Getenv("KILN_TUNE"); s != "" {
		var name string
		fmt.Sscanf(s, "%d,%d,%d,%s", &gemmKC, &gemmMC, &gemmNB, &name)
		for _, k := range kernelsF32 {
			if k.name == name {
				kernelF32 = k
			}
		}
		fmt.Fprintln(os.Stderr, "tune", gemmKC, gemmMC, gemmNB, kernelF32.name)
	}
}
