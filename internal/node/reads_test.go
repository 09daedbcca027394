package node

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/state"
)

func TestReadsShared(t *testing.T) {
	var shows atomic.Int32
	release := make(chan struct{})
	r := &Reads{Keep: 200 * time.Millisecond, Show: func(context.Context) (state.State, error) {
		shows.Add(1)
		<-release
		return state.State{}, nil
	}}
	ctx := context.Background()
	read := func() { _, _ = r.Read(ctx) }

	r.Changed()
	// Two readers at once after one change: one read, the second waits for it.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); read() }()
	time.Sleep(20 * time.Millisecond)
	go func() { defer wg.Done(); read() }()
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := shows.Load(); n != 1 {
		t.Fatalf("two readers after one change: %d reads, want 1", n)
	}
	// A change after the read: read again.
	r.Changed()
	read()
	if n := shows.Load(); n != 2 {
		t.Fatalf("a reader after a new change: %d reads, want 2", n)
	}
	read()
	if n := shows.Load(); n != 2 {
		t.Fatalf("a reader with no change since: %d reads, want 2", n)
	}
	// Past Keep the read is dropped: nothing is held at rest, and the next reader reads.
	time.Sleep(300 * time.Millisecond)
	r.mu.Lock()
	held := r.last != nil
	r.mu.Unlock()
	if held {
		t.Fatal("a read still held past Keep")
	}
	read()
	if n := shows.Load(); n != 3 {
		t.Fatalf("a reader past Keep: %d reads, want 3", n)
	}
}
