package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The handler is idle nearly all the time and works in bursts: an apply, or a read of the
// node's state (about 10 MB of garbage on a node with 200 interfaces). Left to itself the Go
// runtime keeps a burst's garbage until its next collection, which an idle process reaches
// only by the runtime's 2-minute forced collection, and returns the freed pages to the
// kernel over minutes after that. So once a burst is over, the handler collects and returns
// them at once.
const (
	// trimEvery is how often the allocation counter is read.
	trimEvery = 5 * time.Second
	// burstBytes allocated between two reads is work; less is idle.
	burstBytes = 1 << 20
)

// trimAfterBursts returns the memory of each burst of work to the kernel once a read finds
// the burst over, until ctx ends.
func trimAfterBursts(ctx context.Context) error {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocated := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	last, working := allocated(), false
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now := allocated()
		var trim bool
		working, trim = afterBurst(working, now-last)
		if trim {
			debug.FreeOSMemory()
		}
		last = allocated()
	}
}

// afterBurst decides, from whether the handler was working and what it allocated since the
// last read, whether it is working now and whether to return memory: once, when a burst ends.
func afterBurst(working bool, allocated uint64) (stillWorking, trim bool) {
	if allocated >= burstBytes {
		return true, false
	}
	return false, working
}
