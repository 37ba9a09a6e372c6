package cpu

import (
	"bufio"
	"math"
	"os"
	"slices"
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

// cgroupCPULimit returns the CPU bandwidth limit of the process's cgroup
// and its ancestors (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us over
// cpu.cfs_period_us) rounded up to whole CPUs, or 0 when there is none or it
// cannot be read. It is read once; Go's runtime follows later changes
// through GOMAXPROCS, which the pool reads too.
var cgroupCPULimit = sync.OnceValue(func() int { return cpuLimitFrom("/proc/self/cgroup", "/sys/fs/cgroup") })

// cpuLimitFrom is cgroupCPULimit reading the process's cgroups from
// cgroupFile and the cgroup file systems under root.
func cpuLimitFrom(cgroupFile, root string) int {
	data, err := os.ReadFile(cgroupFile)
	if err != nil {
		return 0
	}
	limit := 0.0 // CPUs; 0: none found
	lower := func(l float64) {
		if l > 0 && (limit == 0 || l < limit) {
			limit = l
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		path := parts[2]
		if parts[0] == "0" && parts[1] == "" { // v2: unified, or beside v1 (hybrid)
			for _, mount := range []string{"", "/unified"} {
				for _, dir := range cgroupDirs(root+mount, path) {
					lower(readCPUMax(dir))
				}
			}
			continue
		}
		if !slices.Contains(strings.Split(parts[1], ","), "cpu") {
			continue
		}
		for _, mount := range []string{"cpu", "cpu,cpuacct", "cpuacct,cpu"} { // v1
			for _, dir := range cgroupDirs(root+"/"+mount, path) {
				lower(readCFSQuota(dir))
			}
		}
	}
	if limit == 0 {
		return 0
	}
	return int(math.Ceil(limit - 1e-9))
}

// cgroupDirs returns the directory of cgroup path under root and those of
// its ancestors up to root.
func cgroupDirs(root, path string) []string {
	dirs := []string{root}
	p := ""
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		if part == "" || part == ".." || part == "." {
			continue
		}
		p += "/" + part
		dirs = append(dirs, root+p)
	}
	return dirs
}

// readCPUMax reads a v2 cpu.max ("quota period", or "max period") in dir
// as CPUs, 0 when unlimited or unreadable.
func readCPUMax(dir string) float64 {
	data, err := os.ReadFile(dir + "/cpu.max")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) != 2 || f[0] == "max" {
		return 0
	}
	quota, err1 := strconv.ParseFloat(f[0], 64)
	period, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0
	}
	return quota / period
}

// readCFSQuota reads a v1 CFS quota in dir as CPUs, 0 when unlimited (-1)
// or unreadable.
func readCFSQuota(dir string) float64 {
	q, err1 := os.ReadFile(dir + "/cpu.cfs_quota_us")
	p, err2 := os.ReadFile(dir + "/cpu.cfs_period_us")
	if err1 != nil || err2 != nil {
		return 0
	}
	quota, err1 := strconv.ParseFloat(strings.TrimSpace(string(q)), 64)
	period, err2 := strconv.ParseFloat(strings.TrimSpace(string(p)), 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0
	}
	return quota / period
}

// parseRunnable returns the running count of a /proc/loadavg line ("0.52
// 0.58 0.59 3/467 12345": 3), or -1 when the line has no such field. It
// allocates nothing (see runnableTasks).
func parseRunnable(line []byte) int {
	field, i := 0, 0
	for field < 3 { // skip the three load averages and the spaces after them
		for i < len(line) && line[i] != ' ' {
			i++
		}
		for i < len(line) && line[i] == ' ' {
			i++
		}
		field++
	}
	n, digits := 0, 0
	for ; i < len(line) && line[i] >= '0' && line[i] <= '9' && digits < 9; i++ {
		n = n*10 + int(line[i]-'0')
		digits++
	}
	if digits == 0 || i >= len(line) || line[i] != '/' {
		return -1
	}
	return n
}
