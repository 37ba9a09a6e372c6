//go:build race

package main

// raceEnabled: the race detector is on. The demo trainings then skip: they
// check accuracy and MPI orchestration in child processes that the race
// detector slows five- to tenfold (minutes each), and the plain run checks
// them; dist's own tests drive mpirun under the race detector.
const raceEnabled = true
