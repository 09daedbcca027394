package node

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"k8s.io/client-go/util/connrotation"

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

// TestReconnectingClosesAtOnceWhenTheLocalAddressIsGone: connections whose local address
// the apply removed are closed without waiting for them to answer.
func TestReconnectingClosesAtOnceWhenTheLocalAddressIsGone(t *testing.T) {
	for _, tc := range []struct {
		name       string
		gone       bool
		wantAlive  bool // asked after the apply
		wantClosed bool
	}{
		{"address gone: closed, not asked", true, false, true},
		{"address still there: asked, and kept when it answers", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			applied, closed, askedAfter := false, false, false
			r := Reconnecting{
				Backend:  appliedBackend{after: func() { applied = true }},
				CloseAll: func() { closed = true },
				Alive: func(context.Context) error {
					askedAfter = askedAfter || applied
					return nil
				},
				Gone: func() (netip.Addr, bool) { return netip.MustParseAddr("192.0.2.20"), tc.gone },
			}
			if _, err := r.Apply(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if closed != tc.wantClosed || askedAfter != tc.wantAlive {
				t.Errorf("closed %v, asked after the apply %v; want %v, %v", closed, askedAfter, tc.wantClosed, tc.wantAlive)
			}
		})
	}
}

// TestLocalAddrs: real connections over loopback are tracked by their local address until
// closed, whether by their client or by the dialer that wraps them, and Gone names one the
// node no longer has.
func TestLocalAddrs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	loopback := netip.MustParseAddr("127.0.0.1")
	present := map[netip.Addr]bool{loopback: true}
	l := &LocalAddrs{onNode: func(a netip.Addr) bool { return present[a] }}
	rotating := connrotation.NewDialer(l.Dial((&net.Dialer{}).DialContext)) // as the handler's clients dial
	a, err := rotating.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_, err = rotating.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if addr, gone := l.Gone(); gone {
		t.Fatalf("Gone says %s, which the node has", addr)
	}
	present[loopback] = false // as if the apply removed it
	if addr, gone := l.Gone(); !gone || addr != loopback {
		t.Fatalf("Gone: %s %v, want %s true", addr, gone, loopback)
	}
	_ = a.Close()
	_ = a.Close() // a second close releases nothing more
	if _, gone := l.Gone(); !gone {
		t.Fatal("one connection from the address is still open: Gone must still say so")
	}
	rotating.CloseAll() // b, as Reconnecting does
	if addr, gone := l.Gone(); gone {
		t.Fatalf("no connection is open, yet Gone says %s", addr)
	}
}

// TestOnNode asks the kernel: loopback is this machine's, TEST-NET-1's 192.0.2.77 is not.
func TestOnNode(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1": true, "::1": true, "192.0.2.77": false, "2001:db8::77": false} {
		if got := OnNode(netip.MustParseAddr(addr)); got != want {
			t.Errorf("OnNode(%s) = %v, want %v", addr, got, want)
		}
	}
}
