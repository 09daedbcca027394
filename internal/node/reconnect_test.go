package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/backend"
)

func TestAliveAllowance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rtt   time.Duration
		known bool
		want  time.Duration
	}{
		{"unknown before the apply: the whole timeout", 0, false, AliveTimeout},
		{"answered at once: the floor", 3 * time.Millisecond, true, 500 * time.Millisecond},
		{"answered in 40 ms: 20 times that", 40 * time.Millisecond, true, 800 * time.Millisecond},
		{"answered slowly: capped", 300 * time.Millisecond, true, AliveTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := aliveAllowance(tc.rtt, tc.known); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// appliedBackend applies nothing and succeeds; after tells the fake connections the apply
// ran.
type appliedBackend struct {
	backend.Backend
	after func()
}

func (b appliedBackend) Apply(context.Context, backend.Desired) (backend.Transaction, error) {
	b.after()
	return nil, nil
}

// TestReconnectingBoundsTheCheckByTheConnectionsBefore: connections that answered before
// the apply and hang after it (the apply changed the API server's path) are closed once the
// allowance for how they answered before has passed, not after AliveTimeout.
func TestReconnectingBoundsTheCheckByTheConnectionsBefore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		aliveErr  error // before the apply
		wantBound time.Duration
	}{
		{"answered before", nil, 500 * time.Millisecond},
		{"did not answer before", errors.New("connection refused"), AliveTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applied, closed := false, false
			var bound time.Duration
			r := Reconnecting{
				Backend:  appliedBackend{after: func() { applied = true }},
				CloseAll: func() { closed = true },
				Alive: func(ctx context.Context) error {
					if !applied {
						return tc.aliveErr
					}
					d, _ := ctx.Deadline()
					bound = time.Until(d)
					return context.DeadlineExceeded // dead after the apply; returned at once, the bound is what is checked
				},
			}
			if _, err := r.Apply(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if !closed {
				t.Error("connections that did not answer after the apply were kept")
			}
			if bound > tc.wantBound || bound < tc.wantBound-200*time.Millisecond {
				t.Errorf("the check after the apply was bounded by %v, want %v", bound, tc.wantBound)
			}
		})
	}
}
