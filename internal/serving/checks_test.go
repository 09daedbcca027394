package serving

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A dependency that restarts keeps the daemon ready; one gone for the grace period or
// longer does not, until it answers again.
func TestAnswering(t *testing.T) {
	now := time.Unix(0, 0)
	var down error
	check := Answering("NetworkManager", func(context.Context) error { return down }, 10*time.Second, func() time.Time { return now })
	req := httptest.NewRequest("GET", "/readyz", nil)
	gone := errors.New("org.freedesktop.NetworkManager was not provided by any .service files")
	for _, step := range []struct {
		after time.Duration
		err   error
		want  string // "" ready
	}{
		{0, nil, ""},
		{time.Second, gone, ""},     // it stopped: a restart, perhaps
		{9 * time.Second, gone, ""}, // 9 s gone
		{time.Second, gone, "NetworkManager has not answered for 10s: org.freedesktop.NetworkManager was not provided"},
		{5 * time.Second, gone, "NetworkManager has not answered for 15s"},
		{time.Second, nil, ""},  // back
		{time.Second, gone, ""}, // gone again: the grace starts over
	} {
		now = now.Add(step.after)
		down = step.err
		err := check(req)
		switch {
		case step.want == "" && err != nil:
			t.Errorf("at %v: %v, want ready", now.Unix(), err)
		case step.want != "" && (err == nil || !strings.HasPrefix(err.Error(), step.want)):
			t.Errorf("at %v: %v, want %q", now.Unix(), err, step.want)
		}
	}
}
