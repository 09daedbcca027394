package overlay

import (
	"testing"

	"github.com/nmoverlay/nmoverlay/internal/paths"
)

func TestLayersMatch(t *testing.T) {
	l := paths.DefaultLayout()
	for _, tc := range []struct {
		vfs  string
		want bool
	}{
		{"rw,lowerdir=/etc/NetworkManager/system-connections,upperdir=/run/nmoverlay/upper,workdir=/run/nmoverlay/work,redirect_dir=off,index=off,xino=off", true},
		{"rw,context=\"system_u:object_r:x:s0\",lowerdir=/etc/NetworkManager/system-connections,upperdir=/run/nmoverlay/upper,workdir=/run/nmoverlay/work", true},
		{"rw,lowerdir=/srv/other,upperdir=/run/nmoverlay/upper,workdir=/run/nmoverlay/work", false},
		{"rw,lowerdir=/etc/NetworkManager/system-connections,upperdir=/var/upper,workdir=/var/work", false},
		{"rw,lowerdir=/etc/NetworkManager/system-connections:/extra,upperdir=/run/nmoverlay/upper,workdir=/run/nmoverlay/work", false},
		{"rw", false},
	} {
		if got := layersMatch(tc.vfs, l); got != tc.want {
			t.Errorf("layersMatch(%q) = %v, want %v (%s)", tc.vfs, got, tc.want, layersDetail(tc.vfs, l))
		}
	}
}

func TestReportReason(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: CheckMounted, OK: true, Detail: "fine"},
		{Name: CheckTmpfs, OK: false, Detail: "upper on disk"},
		{Name: CheckNMConfig, OK: false, Detail: "elsewhere"},
	}}
	if got, want := r.Reason(), "upper-on-tmpfs: upper on disk; nm-config: elsewhere"; got != want {
		t.Errorf("Reason() = %q, want %q", got, want)
	}
	if len(r.Failed()) != 2 {
		t.Errorf("Failed() = %v", r.Failed())
	}
}
