package node

import (
	"fmt"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// Failure backoff: a policy whose apply failed waits 30 s, doubling up to 10 minutes,
// before it is tried again at the same generation. A change that broke a probe is not
// applied again at once (each try costs the node its network for the probes' duration),
// and other policies are applied meanwhile.
const (
	failureBackoffInitial = 30 * time.Second
	failureBackoffMax     = 10 * time.Minute
)

// failures is the handler's failure history: what Settle said failed, with when each may
// be tried again from client-go's flowcontrol.Backoff, keyed by policy and generation (a
// new generation starts at the initial backoff).
type failures struct {
	backoff  *flowcontrol.Backoff
	byPolicy map[string]Failure
}

// record keeps the pass's outcome: failed policies get their next backoff, applied ones
// are forgotten.
func (f *failures) record(s Snapshot, d Decision) {
	if f.backoff == nil {
		f.backoff = flowcontrol.NewBackOff(failureBackoffInitial, failureBackoffMax)
		f.byPolicy = map[string]Failure{}
	}
	for name, fail := range d.Failed {
		key := backoffKey(name, fail.Generation)
		f.backoff.Next(key, s.Now)
		fail.RetryAt = s.Now.Add(f.backoff.Get(key))
		f.byPolicy[name] = fail
	}
	for _, name := range d.Succeeded {
		if prev, ok := f.byPolicy[name]; ok {
			f.backoff.Reset(backoffKey(name, prev.Generation))
			delete(f.byPolicy, name)
		}
	}
	f.backoff.GC()
}

func backoffKey(policy string, generation int64) string {
	return fmt.Sprintf("%s/%d", policy, generation)
}
