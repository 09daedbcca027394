// Package readyourwrites makes a reconciler's next pass see its own writes. An informer
// cache lags the API server: a pass that starts before the cache has seen the previous
// pass's writes decides on stale status, redoes work and gets 409 conflicts. Waiting for
// the cache costs no API request.
package readyourwrites

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Timeout bounds the wait: a cache that does not catch up (a watch being re-established)
// costs at most a conflict later, never a stuck reconciler.
const Timeout = 5 * time.Second

// Writes records what one pass wrote.
type Writes struct {
	mu      sync.Mutex
	written map[client.ObjectKey]write
}

type write struct {
	obj     client.Object // as the API server returned it
	deleted bool
	at      time.Time
}

// Forget is how long a write the cache never showed is kept for a later Await: by then
// the object was deleted by another before the cache saw it, and waiting longer would
// stop the reconciler for good.
const Forget = time.Minute

// Wrote records obj as the API server returned it from a create or update.
func (w *Writes) Wrote(obj client.Object) {
	w.record(write{obj: obj.DeepCopyObject().(client.Object), at: time.Now()})
}

// Deleted records that obj was deleted.
func (w *Writes) Deleted(obj client.Object) {
	w.record(write{obj: obj.DeepCopyObject().(client.Object), deleted: true, at: time.Now()})
}

func (w *Writes) record(wr write) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written == nil {
		w.written = map[client.ObjectKey]write{}
	}
	w.written[client.ObjectKeyFromObject(wr.obj)] = wr
}

// Await returns once cache serves every recorded write (the same resourceVersion, or
// NotFound for a delete), or after Timeout. It reports whether the cache caught up; the
// writes it did not see stay recorded, for a later Await (a reconciler that must never
// decide on a cache without its own writes waits for them before its next decision).
func (w *Writes) Await(ctx context.Context, cache client.Reader) bool {
	w.mu.Lock()
	pending := w.written
	w.written = nil
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	for _, want := range pending {
		err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			return observed(ctx, cache, want), nil
		})
		if err != nil { // Timeout: keep what is not seen yet
			w.mu.Lock()
			defer w.mu.Unlock()
			for k, wr := range pending {
				if _, newer := w.written[k]; !newer && time.Since(wr.at) < Forget && !observed(context.Background(), cache, wr) {
					if w.written == nil {
						w.written = map[client.ObjectKey]write{}
					}
					w.written[k] = wr
				}
			}
			return false
		}
	}
	return true
}

// observed: the cache holds the object at the resourceVersion written, or none if deleted.
func observed(ctx context.Context, cache client.Reader, want write) bool {
	got := want.obj.DeepCopyObject().(client.Object)
	err := cache.Get(ctx, client.ObjectKeyFromObject(want.obj), got)
	if want.deleted {
		return apierrors.IsNotFound(err)
	}
	if err != nil {
		return false
	}
	// Another writer may have moved the object on since: a version at or after ours shows
	// our write too (resource versions are comparable, KEP-5504).
	cmp, cerr := resourceversion.CompareResourceVersion(got.GetResourceVersion(), want.obj.GetResourceVersion())
	if cerr != nil {
		return got.GetResourceVersion() == want.obj.GetResourceVersion()
	}
	return cmp >= 0
}
