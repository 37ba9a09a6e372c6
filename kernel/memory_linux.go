package kernel

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// physicalMemory returns the memory available to the process: the
// machine's RAM, or the cgroup's limit when it is lower (containers).
func physicalMemory() uint64 {
	var info syscall.Sysinfo_t
	if syscall.Sysinfo(&info) != nil {
		return 0
	}
	total := uint64(info.Totalram) * uint64(info.Unit)
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < total {
			total = n
		}
	}
	return total
}
