package node

import (
	"context"
	"sync"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

// Reads shares the handler's reads of the node's state between those who read it after a
// change NetworkManager signals, the drift check and the NodeNetworkState's reporter: on
// 2,000 interfaces a read is most of what a change costs the handler, and NetworkManager
// answers one D-Bus call at a time. A read is answered by the last one when that started
// after the last change signalled and at most keepRead ago; one in flight is waited for.
// The last read is dropped after keepRead, so that no state is held at rest.
type Reads struct {
	Show func(ctx context.Context) (state.State, error)
	// Keep is how long a read answers others; default keepRead.
	Keep time.Duration

	mu         sync.Mutex // held across a read: a second reader waits for it
	last       *read
	generation int
	changedMu  sync.Mutex // apart from mu, which a read holds: a change is noted at once
	changed    time.Time  // the last change signalled
}

type read struct {
	started time.Time
	s       state.State
}

// keepRead is how long a read answers others, unless Keep says.
const keepRead = 2 * time.Second

// Changed notes a change of the node: a read that started before it answers no one.
func (r *Reads) Changed() {
	r.changedMu.Lock()
	r.changed = time.Now()
	r.changedMu.Unlock()
}

// Read is the node's state, read after the last change signalled.
func (r *Reads) Read(ctx context.Context) (state.State, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changedMu.Lock()
	changed := r.changed
	r.changedMu.Unlock()
	keep := r.Keep
	if keep <= 0 {
		keep = keepRead
	}
	if l := r.last; l != nil && l.started.After(changed) && time.Since(l.started) < keep {
		return l.s, nil
	}
	started := time.Now()
	s, err := r.Show(ctx)
	if err != nil {
		r.last = nil
		return s, err
	}
	r.last = &read{started: started, s: s}
	r.generation++
	gen := r.generation
	time.AfterFunc(keep, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.generation == gen {
			r.last = nil
		}
	})
	return s, nil
}
