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
	// gone: objects the cache saw deleted while an Await had the writes out; that Await
	// drops the writes they supersede, and clears them.
	gone map[client.ObjectKey]client.Object
}

type write struct {
	obj     client.Object // as the API server returned it
	deleted bool
	at      time.Time
}

// AskAfter is how old a write the cache does not show must be before the API server is
// asked whether it was superseded. A cache lags seconds behind a loaded API server (its
// watch re-established): asked after Timeout, 200 handlers sent 1,500 reads while
// converging 200 nodes x 20 policies, each answered "not superseded, still coming" (0.38
// requests per node-policy pair, BenchmarkAPILoad).
const AskAfter = 20 * time.Second

// Forget is how long a write the cache never showed is kept for a later Await, when the
// API server cannot be asked what superseded it: waiting longer would stop the reconciler
// for good.
const Forget = time.Minute

// Wrote records obj as the API server returned it from a create or update.
func (w *Writes) Wrote(obj client.Object) {
	w.record(write{obj: obj.DeepCopyObject().(client.Object), at: time.Now()})
}

// Deleted records that obj was deleted.
func (w *Writes) Deleted(obj client.Object) {
	w.record(write{obj: obj.DeepCopyObject().(client.Object), deleted: true, at: time.Now()})
}

// Gone tells the record that the cache saw obj deleted (its informer's delete event, obj
// as it was last): a write to it at or before that version was superseded and will never
// show, so it is not waited for. Without this a write to an object someone deleted (a
// node deleting its own enactment just granted) held the reconciler until AskAfter.
func (w *Writes) Gone(obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := client.ObjectKeyFromObject(obj)
	if wr, ok := w.written[key]; ok && supersededBy(wr, obj) {
		delete(w.written, key)
		return
	}
	if w.gone == nil {
		w.gone = map[client.ObjectKey]client.Object{}
	}
	w.gone[key] = obj.DeepCopyObject().(client.Object)
}

// supersededBy: the write was to deleted (the same object, at or before the version
// deleted).
func supersededBy(wr write, deleted client.Object) bool {
	return !wr.deleted && wr.obj.GetUID() == deleted.GetUID() && atOrAfter(deleted, wr.obj)
}

// goneSince: the cache saw the object of want deleted since it was written.
func (w *Writes) goneSince(want write) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	deleted, ok := w.gone[client.ObjectKeyFromObject(want.obj)]
	return ok && supersededBy(want, deleted)
}

func (w *Writes) record(wr write) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written == nil {
		w.written = map[client.ObjectKey]write{}
	}
	w.written[client.ObjectKeyFromObject(wr.obj)] = wr
}

// Await returns once cache serves every recorded write, or after Timeout. It reports
// whether the cache caught up; the writes it did not see stay recorded, for a later Await
// (a reconciler that must never decide on a cache without its own writes waits for them
// before its next decision).
//
// A write the cache does not show, AskAfter after it was made, is looked up in live
// (uncached; nil for none): when the cache already serves what the API server holds now, the write was
// superseded and will never show (another deleted the object, or etcd was restored to
// before the write), so it is not waited for.
func (w *Writes) Await(ctx context.Context, cache, live client.Reader) bool {
	w.mu.Lock()
	pending := w.written
	w.written = nil
	w.mu.Unlock()
	waiting, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	unseen := map[client.ObjectKey]write{}
	for k, want := range pending {
		// Each write is looked at at least once, after the timeout too (the poll's first look
		// is immediate).
		if wait.PollUntilContextCancel(waiting, 10*time.Millisecond, true, func(context.Context) (bool, error) {
			return observed(ctx, cache, want) || w.goneSince(want), nil
		}) == nil || time.Since(want.at) >= AskAfter && superseded(ctx, cache, live, want) || time.Since(want.at) >= Forget {
			continue
		}
		unseen[k] = want
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone = nil // each was for a write this Await had out, or for none
	if len(unseen) == 0 {
		return true
	}
	if w.written == nil {
		w.written = map[client.ObjectKey]write{}
	}
	for k, wr := range unseen {
		if _, newer := w.written[k]; !newer {
			w.written[k] = wr
		}
	}
	return false
}

// observed: the cache holds the object at the resourceVersion written or later, or none
// if deleted; or it holds another object of that name (deleted and created again since).
func observed(ctx context.Context, cache client.Reader, want write) bool {
	got := want.obj.DeepCopyObject().(client.Object)
	err := cache.Get(ctx, client.ObjectKeyFromObject(want.obj), got)
	if err != nil {
		return want.deleted && apierrors.IsNotFound(err)
	}
	if got.GetUID() != want.obj.GetUID() {
		return true
	}
	return !want.deleted && atOrAfter(got, want.obj)
}

// superseded: the cache serves the object as the API server holds it now (or both have
// none), so nothing written before is still to come.
func superseded(ctx context.Context, cache, live client.Reader, want write) bool {
	if live == nil {
		return false
	}
	key := client.ObjectKeyFromObject(want.obj)
	now := want.obj.DeepCopyObject().(client.Object)
	liveErr := live.Get(ctx, key, now)
	if liveErr != nil && !apierrors.IsNotFound(liveErr) {
		return false
	}
	cached := want.obj.DeepCopyObject().(client.Object)
	cacheErr := cache.Get(ctx, key, cached)
	if apierrors.IsNotFound(liveErr) {
		return apierrors.IsNotFound(cacheErr)
	}
	return cacheErr == nil && cached.GetUID() == now.GetUID() && atOrAfter(cached, now)
}

// atOrAfter: got is the version of want or a later one. Another writer may have moved the
// object on since: a later version shows our write too (resource versions are comparable,
// KEP-5504).
func atOrAfter(got, want client.Object) bool {
	cmp, err := resourceversion.CompareResourceVersion(got.GetResourceVersion(), want.GetResourceVersion())
	if err != nil {
		return got.GetResourceVersion() == want.GetResourceVersion()
	}
	return cmp >= 0
}
