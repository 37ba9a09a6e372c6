// Package extract reads Go packages' declarations and doc comments for
// kernel/docs (its generator and its freshness test).
package extract
