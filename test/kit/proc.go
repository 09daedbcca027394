package kit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcStatusKiB reads a field (VmRSS, VmHWM) of a process's /proc status, in KiB; 0 when
// the process or the field is not there.
func ProcStatusKiB(pid int, field string) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb
			}
		}
	}
	return 0
}

// ProcCPU is the CPU time a process has used, user and system, from /proc/PID/stat.
func ProcCPU(pid int) time.Duration {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// The command name, in parentheses, may hold spaces: the fields count from after it.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	// utime and stime are fields 14 and 15 of stat, 12 and 13 after the name, in clock
	// ticks: 100 a second on Linux (USER_HZ).
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
