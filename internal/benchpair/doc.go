// Package benchpair times two variants of one workload (a fused kernel and
// the ops it replaces, say) alternately inside one benchmark, so that both
// meet the same machine: on a shared machine, timing them in separate
// benchmarks or with -count runs one variant in a quiet minute and the
// other in a busy one.
package benchpair
