package version

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDerive(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name, release string
		info          *debug.BuildInfo
		want          string
	}{
		{"between releases: the commit", "0.4.0-dev", vcs(rev, "false"), "0.4.0-dev-0123456789ab"},
		{"a modified tree", "0.4.0-dev", vcs(rev, "true"), "0.4.0-dev-0123456789ab-dirty"},
		{"a release: itself", "0.4.0", vcs(rev, "false"), "0.4.0"},
		{"no VCS recorded", "0.4.0-dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "0.4.0-dev"},
		{"no build info", "0.4.0-dev", nil, "0.4.0-dev"},
		{"go install @v0.4.1", "0.4.1", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.1"}}, "0.4.1"},
		{"go install @commit: a pseudo-version", "0.4.0-dev",
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126220000-0123456789ab"}}, "0.0.0-20261126220000-0123456789ab"},
	} {
		if got := Derive(tc.release, tc.info); got != tc.want {
			t.Errorf("%s: Derive(%q) = %q, want %q", tc.name, tc.release, got, tc.want)
		}
	}
}

// hack/version.sh, which make build and hack/image.sh stamp, says what Derive says of the
// same tree.
func TestVersionScriptAgrees(t *testing.T) {
	out, err := exec.Command("../../hack/version.sh").Output()
	if err != nil {
		t.Skipf("hack/version.sh: %v (no git here)", err)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("git: %v", err)
	}
	status, err := exec.Command("git", "status", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	modified := "false"
	if len(status) > 0 {
		modified = "true"
	}
	info := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: strings.TrimSpace(string(head))}, {Key: "vcs.modified", Value: modified}}}
	if got, want := strings.TrimSpace(string(out)), Derive(Release(), info); got != want {
		t.Errorf("hack/version.sh = %q, Derive = %q", got, want)
	}
}
