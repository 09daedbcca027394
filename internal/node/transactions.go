package node

import (
	"context"
	"sync"
	"time"
)

// Transactions marks the handler's transactions for the reporter, which reads the node's
// state only between them: a state read in the middle of one may be rolled back a moment
// later, and a 500-interface apply is hundreds of device changes that make one write of
// where it ended. The zero value is ready, with no transaction running.
type Transactions struct {
	mu      sync.Mutex
	running int
	begun   uint64        // transactions begun so far
	idle    chan struct{} // closed when the last running transaction ends
}

// Begin marks a transaction running; the function it returns marks it ended.
func (t *Transactions) Begin() (end func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running == 0 {
		t.idle = make(chan struct{})
	}
	t.running++
	t.begun++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.running--; t.running == 0 {
				close(t.idle)
			}
		})
	}
}

// Expect marks a pass about to begin that may begin a transaction at once: a handler's
// first, which in a new boot applies every policy. The reporter waits for it as for a
// transaction: what it read meanwhile would be thrown away once the transaction began,
// and its read of NetworkManager, which answers one call at a time, delayed the
// transaction's own (on 2,000 interfaces, with dead connections closed at once, a boot's
// re-convergence went from 7.8-8.4 s to 6.0-7.0 s). The function it returns marks the
// pass over; after most it is over by itself.
func (t *Transactions) Expect(most time.Duration) (over func()) {
	end := t.Begin()
	timer := time.AfterFunc(most, end)
	return func() {
		timer.Stop()
		end()
	}
}

// wait returns once no transaction runs, or ctx ended; it says whether one was running.
func (t *Transactions) wait(ctx context.Context) (waited bool) {
	t.mu.Lock()
	running, idle := t.running > 0, t.idle
	t.mu.Unlock()
	if !running {
		return false
	}
	select {
	case <-idle:
	case <-ctx.Done():
	}
	return true
}

// mark is where the transactions stand: how many began, and whether one runs. A read made
// between two equal marks with none running saw no transaction.
func (t *Transactions) mark() (begun uint64, running bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.begun, t.running > 0
}
