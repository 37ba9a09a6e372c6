package cpu

// Costs of the GEMM runners, for the pool's tuner (sched_tuner.go): a job
// of gemmInStrips has about stripsPerWorker chunks per worker whatever the
// size of the product, and one of a shared GEMM step a number of tasks
// that says little about their size, so the tuner tells their sizes apart
// by these costs (multiply-adds), as it would otherwise average a 128³
// product with a 2048³ one.

func (g *gemmStrips[T]) parallelCost() int { return g.m * g.n * g.k }

func (g *gemmStep[T]) parallelCost() int { return g.m * g.ncur * g.kcur }
