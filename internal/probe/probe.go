// Package probe checks, after an apply and before its commit, that the node can still do
// what it must: reach its default gateway, resolve names, reach the API server, and stay
// Ready. A probe that already fails before the apply is not used after it (the change is
// not to blame). Healthy probes cost little: each returns at its first success.
package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Probe is one connectivity check.
type Probe interface {
	Name() string
	// Check returns nil when healthy; it is retried until it succeeds or ctx ends.
	Check(ctx context.Context) error
}

// Func adapts a function to Probe.
type Func struct {
	ProbeName string
	Fn        func(ctx context.Context) error
	// Once makes the baseline a single check: what the probe reads changes on its own
	// schedule, not within Set.Before (a Node's Ready condition, which the kubelet posts
	// every 10 s and holds False for its first seconds after a boot).
	Once bool
}

func (f Func) Name() string                    { return f.ProbeName }
func (f Func) Check(ctx context.Context) error { return f.Fn(ctx) }
func (f Func) baselineOnce() bool              { return f.Once }

// Set is the probes of one apply.
type Set struct {
	Probes []Probe
	// Timeout bounds the probes after the apply, all of them together (they run at once):
	// the checkpoint's rollback timeout need only cover activation plus this. Default 60 s.
	Timeout time.Duration
	// Before bounds each probe before the apply; default 5 s.
	Before time.Duration
}

// Baseline checks every probe before the apply, all at once, each until it passes or for
// Before (a single check for a probe marked Once), and returns the ones that passed, in
// order: only those are used after it.
func (s Set) Baseline(ctx context.Context) []Probe {
	return s.BaselineKnowing(ctx, nil)
}

// BaselineKnowing is Baseline, checking once, not for Before, the probes failedBefore names:
// a probe that failed the last baseline (no DNS server in a disconnected site) would
// otherwise cost every apply Before for nothing; if it passes now, it is used.
func (s Set) BaselineKnowing(ctx context.Context, failedBefore func(name string) bool) []Probe {
	d := s.Before
	if d <= 0 {
		d = 5 * time.Second
	}
	passed := make([]bool, len(s.Probes))
	var wg sync.WaitGroup
	for i, p := range s.Probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if o, ok := p.(interface{ baselineOnce() bool }); ok && o.baselineOnce() || failedBefore != nil && failedBefore(p.Name()) {
				attempt, cancel := context.WithTimeout(ctx, attemptTimeout)
				defer cancel()
				passed[i] = p.Check(attempt) == nil
				return
			}
			passed[i] = poll(ctx, p, d) == nil
		}()
	}
	wg.Wait()
	var healthy []Probe
	for i, p := range s.Probes {
		if passed[i] {
			healthy = append(healthy, p)
		}
	}
	return healthy
}

// Failure names the probe that failed and why.
type Failure struct {
	Probe string
	Err   error
}

func (f *Failure) Error() string { return fmt.Sprintf("probe %s failed: %v", f.Probe, f.Err) }

// Verify runs the given probes after the apply, all at once under one deadline, until each
// has succeeded once; it names the first (in the given order) that did not.
func (s Set) Verify(ctx context.Context, probes []Probe) error {
	d := s.Timeout
	if d <= 0 {
		d = 60 * time.Second
	}
	errs := make([]error, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = poll(ctx, p, d)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return &Failure{Probe: probes[i].Name(), Err: err}
		}
	}
	return nil
}

// attemptTimeout bounds one check of a probe.
const attemptTimeout = 2 * time.Second

// poll checks p until it succeeds, with a short, growing pause (25 ms to 1 s), up to d.
func poll(ctx context.Context, p Probe, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var last error
	pauses := wait.Backoff{Duration: 25 * time.Millisecond, Factor: 2, Cap: time.Second, Steps: math.MaxInt32}
	err := pauses.DelayFunc().Until(ctx, true, false, func(ctx context.Context) (bool, error) {
		attempt, cancelAttempt := context.WithTimeout(ctx, attemptTimeout)
		defer cancelAttempt()
		last = p.Check(attempt)
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && last != nil:
		return fmt.Errorf("%w (still failing after %s)", last, d)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return err
}
