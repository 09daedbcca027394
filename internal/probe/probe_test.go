package probe

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func TestBaselineDropsProbesFailingBeforeTheApply(t *testing.T) {
	ok := Func{ProbeName: "ok", Fn: func(context.Context) error { return nil }}
	broken := Func{ProbeName: "broken", Fn: func(context.Context) error { return errors.New("down already") }}
	got := Set{Probes: []Probe{ok, broken}, Before: 100 * time.Millisecond}.Baseline(context.Background())
	if len(got) != 1 || got[0].Name() != "ok" {
		t.Fatalf("baseline kept %v", got)
	}
}

// TestBaselineChecksAtOnce: each probe's baseline runs while the others' do (two probes that
// each pass only once the other has started both pass), and a probe marked Once is
// checked once, not retried for Before.
func TestBaselineChecksAtOnce(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	waitsForOther := func(name string) Probe {
		var once sync.Once
		return Func{ProbeName: name, Fn: func(ctx context.Context) error {
			once.Do(started.Done)
			select {
			case <-both:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
	}
	var notReadyChecks int
	var mu sync.Mutex
	notReady := Func{ProbeName: "node-ready", Once: true, Fn: func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		notReadyChecks++
		return errors.New("node is False: PLEG is not healthy")
	}}
	got := Set{Probes: []Probe{waitsForOther("a"), notReady, waitsForOther("b")}, Before: 2 * time.Second}.Baseline(context.Background())
	if len(got) != 2 || got[0].Name() != "a" || got[1].Name() != "b" {
		t.Fatalf("baseline kept %v, want a and b in order", got)
	}
	if notReadyChecks != 1 {
		t.Fatalf("the Once probe was checked %d times before the apply, want 1", notReadyChecks)
	}
}

func TestVerifyNamesTheFailingProbe(t *testing.T) {
	calls := 0
	flaky := Func{ProbeName: "flaky", Fn: func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}}
	gone := Func{ProbeName: "default-gateway", Fn: func(context.Context) error { return errors.New("no echo reply from 192.0.2.1") }}
	s := Set{Timeout: 300 * time.Millisecond}
	start := time.Now()
	if err := s.Verify(context.Background(), []Probe{flaky}); err != nil {
		t.Fatalf("flaky probe: %v", err)
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("a probe that recovers after two tries took %v: retries must start fast", d)
	}
	err := s.Verify(context.Background(), []Probe{flaky, gone})
	var f *Failure
	if !errors.As(err, &f) || f.Probe != "default-gateway" || !strings.Contains(err.Error(), "192.0.2.1") {
		t.Fatalf("got %v", err)
	}
}

// TestPingLoopback sends real ICMP echoes to this machine's loopback (root only).
func TestPingLoopback(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("raw ICMP sockets need root")
		}
		t.Skip("raw ICMP sockets need root")
	}
	for _, a := range []string{"127.0.0.1", "::1"} {
		p := Ping("default-gateway", func(context.Context) (netip.Addr, error) { return netip.MustParseAddr(a), nil })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := p.Check(ctx); err != nil {
			t.Errorf("ping %s: %v", a, err)
		}
		cancel()
	}
	none := Ping("default-gateway", func(context.Context) (netip.Addr, error) { return netip.Addr{}, nil })
	if err := none.Check(context.Background()); err == nil {
		t.Error("no gateway must fail")
	}
}

// TestDNS resolves against a real UDP name server on loopback that this test runs.
func TestDNS(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var q dnsmessage.Message
			if q.Unpack(buf[:n]) != nil || len(q.Questions) == 0 {
				continue
			}
			r := dnsmessage.Message{Header: dnsmessage.Header{ID: q.ID, Response: true, Authoritative: true}, Questions: q.Questions}
			if q.Questions[0].Name.String() == "api.example.test." {
				if q.Questions[0].Type == dnsmessage.TypeA {
					r.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: q.Questions[0].Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
						Body: &dnsmessage.AResource{A: [4]byte{192, 0, 2, 7}}}}
				}
			} else {
				r.RCode = dnsmessage.RCodeNameError
			}
			out, _ := r.Pack()
			_, _ = pc.WriteTo(out, from)
		}
	}()
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := DNS("api.example.test", resolver).Check(ctx); err != nil {
		t.Errorf("resolvable name: %v", err)
	}
	if err := DNS("missing.example.test", resolver).Check(ctx); err == nil {
		t.Error("an unknown name must fail")
	}
}

// The probes share one deadline (they run at once), so the checkpoint's rollback timeout
// covers them all: a probe that passes only once another has been tried passes, which it
// could not if they ran one after the other, each with the whole timeout.
func TestVerifyRunsProbesAtOnceUnderOneDeadline(t *testing.T) {
	second := make(chan struct{})
	var once sync.Once
	first := Func{ProbeName: "first", Fn: func(ctx context.Context) error {
		select {
		case <-second:
			return nil
		case <-ctx.Done():
			return errors.New("the second probe never ran")
		}
	}}
	other := Func{ProbeName: "second", Fn: func(context.Context) error { once.Do(func() { close(second) }); return nil }}
	if err := (Set{Timeout: 2 * time.Second}).Verify(context.Background(), []Probe{first, other}); err != nil {
		t.Fatalf("probes run one after the other: %v", err)
	}
}

// TestBaselineKnowing: a probe that failed the last baseline is checked once, not polled
// for Before; one that passes now is used again.
func TestBaselineKnowing(t *testing.T) {
	var checks atomic.Int32
	broken := Func{ProbeName: "dns", Fn: func(context.Context) error { checks.Add(1); return errors.New("no such host") }}
	set := Set{Probes: []Probe{broken}, Before: 500 * time.Millisecond}
	start := time.Now()
	if got := set.BaselineKnowing(context.Background(), func(name string) bool { return name == "dns" }); len(got) != 0 {
		t.Errorf("a failing probe passed the baseline: %v", got)
	}
	if took := time.Since(start); took >= 500*time.Millisecond || checks.Load() != 1 {
		t.Errorf("checked %d times in %v: want once, at once", checks.Load(), took)
	}
	fixed := Func{ProbeName: "dns", Fn: func(context.Context) error { return nil }}
	if got := (Set{Probes: []Probe{fixed}, Before: time.Second}).BaselineKnowing(context.Background(), func(string) bool { return true }); len(got) != 1 {
		t.Errorf("a probe that passes now, after failing before, is not used: %v", got)
	}
	checks.Store(0)
	set.BaselineKnowing(context.Background(), func(string) bool { return false })
	if checks.Load() < 2 {
		t.Errorf("a probe not known to fail was checked %d times within Before: want it polled", checks.Load())
	}
}

func TestAPIServerAddress(t *testing.T) {
	ctx := context.Background()
	for host, want := range map[string]string{
		"https://192.0.2.10:6443":    "192.0.2.10",
		"https://[2001:db8::a]:6443": "2001:db8::a",
		"https://localhost:6443":     "", // resolved: loopback, either family
		"::not a url":                "invalid",
	} {
		got := APIServerAddress(ctx, host)
		switch want {
		case "":
			if !got.IsLoopback() {
				t.Errorf("%s: %v, want a loopback address", host, got)
			}
		case "invalid":
			if got.IsValid() {
				t.Errorf("%s: %v, want none", host, got)
			}
		default:
			if got.String() != want {
				t.Errorf("%s: %v, want %s", host, got, want)
			}
		}
	}
}
