package kit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
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
