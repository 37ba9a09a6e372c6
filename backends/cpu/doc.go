// Package cpu is Kiln's pure-Go CPU backend, always compiled in. Kernels run
// on the calling goroutine and a worker pool sized by GOMAXPROCS; work is
// partitioned by fixed chunk sizes, never by the number of workers, so
// results are bit-identical whatever the thread count.
//
// Float16 and BFloat16 are stored as two bytes and computed in float32 or
// float64. Integer arithmetic is exact in int64.
//
// The package registers itself as the "cpu" device kind.
package cpu
