package node

import (
	"context"
	"sync"
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
