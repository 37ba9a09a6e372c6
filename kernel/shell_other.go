//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package kernel

import "os/exec"

// killGroup leaves cmd as it is: its context kills only the command itself
// on systems without Unix process groups.
func killGroup(cmd *exec.Cmd) {}
