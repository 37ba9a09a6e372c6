package train

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// processState reports whether process pid is alive and its start time
// (field 22 of /proc/PID/stat, in clock ticks since boot). A zombie, dead
// but not yet reaped by its parent, counts as gone.
func processState(pid int) (procState, string) {
	if pid <= 0 {
		return procGone, ""
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return procGone, ""
	}
	if err != nil {
		return signalState(pid), ""
	}
	// "pid (comm) state ppid …": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return signalState(pid), ""
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return signalState(pid), ""
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return procGone, ""
	}
	return procAlive, fields[19]
}

// bootID returns the kernel's boot id, new at every boot.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// pidNamespace names the pid namespace of this process, "pid:[4026531836]".
func pidNamespace() string {
	s, _ := os.Readlink("/proc/self/ns/pid")
	return s
}
