package overlay

import (
	"strings"
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

func TestJudgeLabel(t *testing.T) {
	const nm = "system_u:object_r:NetworkManager_etc_rw_t:s0"
	for _, tc := range []struct {
		name, want, got string
		ok              bool
		detail          string
	}{
		{"the context given", nm, nm, true, "merged dir labelled " + nm},
		{"no context on an SELinux host: allowed, and said", "", "system_u:object_r:var_run_t:s0", true, "no SELinux context on the mount: the merged dir is labelled system_u:object_r:var_run_t:s0"},
		{"another context", nm, "system_u:object_r:etc_t:s0", false, "labelled system_u:object_r:etc_t:s0, want " + nm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, detail := judgeLabel(tc.want, tc.got)
			if ok != tc.ok || !strings.Contains(detail, tc.detail) {
				t.Errorf("judgeLabel(%q, %q) = %v %q, want %v and %q", tc.want, tc.got, ok, detail, tc.ok, tc.detail)
			}
		})
	}
}

// A host without SELinux gets no label check: the mount has no context= there.
func TestVerifySELinuxWithoutSELinux(t *testing.T) {
	old := selinuxFS
	selinuxFS = t.TempDir()
	defer func() { selinuxFS = old }()
	added := 0
	verifySELinux(paths.DefaultLayout(), func(string, bool, string, ...any) { added++ })
	if added != 0 {
		t.Errorf("%d checks added on a host without SELinux", added)
	}
}
