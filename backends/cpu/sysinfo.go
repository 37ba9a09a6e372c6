package cpu

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

var sysOnce = sync.OnceValues(func() (string, int64) {
	name := "CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				name = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var mem int64
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				mem = kb * 1024
			}
		}
	}
	return name, mem
})

func cpuName() string { n, _ := sysOnce(); return n }

// totalMemory returns the machine's physical memory in bytes, 0 when unknown.
func totalMemory() int64 { _, m := sysOnce(); return m }
