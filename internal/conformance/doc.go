// Package conformance is the backend conformance suite: about 1,400 cases
// that run every primitive of the backends.Backend contract, over every
// dtype it applies to, on fresh buffers of a session. A test runs each
// case on a device under test and on a reference backend (the CPU) and
// compares what the two return: the CUDA backend within a tolerance per
// dtype, the remote backend byte for byte.
package conformance
