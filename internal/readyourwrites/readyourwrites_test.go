package readyourwrites

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// store serves one ConfigMap at a resourceVersion ("" for none), of a UID ("a" unless
// set).
type store struct{ version, uid string }

func (s *store) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if s.version == "" {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	obj.SetResourceVersion(s.version)
	obj.SetUID(types.UID(s.uid))
	if s.uid == "" {
		obj.SetUID("a")
	}
	return nil
}

func (s *store) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func configMap(version string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ResourceVersion: version, UID: "a"}}
}

// recorded is a record of one write of the ConfigMap at version 120, or of its delete,
// made age ago.
func recorded(deleted bool, age time.Duration) *Writes {
	w := &Writes{}
	if deleted {
		w.Deleted(configMap("120"))
	} else {
		w.Wrote(configMap("120"))
	}
	for k, wr := range w.written {
		wr.at = wr.at.Add(-age)
		w.written[k] = wr
	}
	return w
}

// counted counts the reads of a store.
type counted struct {
	store
	reads int
}

func (c *counted) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.store.Get(ctx, key, obj, opts...)
}

func short(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

func TestAwait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cached  store
		deleted bool
		want    bool
	}{
		{name: "the cache at the version written", cached: store{version: "120"}, want: true},
		{name: "the cache past it: another writer moved the object on", cached: store{version: "135"}, want: true},
		{name: "the cache before it", cached: store{version: "99"}, want: false},
		{name: "not in the cache yet", cached: store{}, want: false},
		{name: "another object of the name: deleted and created again since", cached: store{version: "140", uid: "b"}, want: true},
		{name: "a delete, gone from the cache", cached: store{}, deleted: true, want: true},
		{name: "a delete, still in the cache", cached: store{version: "120"}, deleted: true, want: false},
		{name: "a delete, the name created again since", cached: store{version: "140", uid: "b"}, deleted: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := recorded(tc.deleted, 0)
			c := tc.cached
			if got := w.Await(short(t), &c, nil); got != tc.want {
				t.Fatalf("Await = %v, want %v", got, tc.want)
			}
			if tc.want {
				return
			}
			// Not seen: kept for the next Await, which sees it once the cache has caught up.
			c.version = "120"
			if tc.deleted {
				c.version = ""
			}
			if !w.Await(short(t), &c, nil) {
				t.Error("a later Await did not see the write the cache now shows")
			}
			if !w.Await(short(t), &store{version: "1"}, nil) {
				t.Error("a write seen once is awaited again")
			}
		})
	}
}

// TestAwaitSuperseded: a write the cache does not show is not waited for when the cache
// serves what the API server holds now; and is while the cache lags the API server.
func TestAwaitSuperseded(t *testing.T) {
	for _, tc := range []struct {
		name         string
		deleted      bool
		cached, live store
		want         bool
	}{
		{name: "written, the cache behind the API server", cached: store{version: "99"}, live: store{version: "120"}, want: false},
		{name: "written, deleted by another since", cached: store{}, live: store{}, want: true},
		{name: "written, deleted by another, the cache still behind", cached: store{version: "99"}, live: store{}, want: false},
		{name: "written, etcd restored to before the write", cached: store{version: "80"}, live: store{version: "80"}, want: true},
		{name: "written, etcd restored to before the object", cached: store{}, live: store{}, want: true},
		{name: "deleted, the cache behind the API server", deleted: true, cached: store{version: "120"}, live: store{}, want: false},
		{name: "deleted, etcd restored to before the delete", deleted: true, cached: store{version: "120"}, live: store{version: "120"}, want: true},
		{name: "deleted, etcd restored, the cache not relisted yet", deleted: true, cached: store{}, live: store{version: "120"}, want: true},
		{name: "deleted, restored, the cache behind", deleted: true, cached: store{version: "100"}, live: store{version: "120"}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := recorded(tc.deleted, AskAfter)
			if got := w.Await(short(t), &tc.cached, &tc.live); got != tc.want {
				t.Fatalf("Await = %v, want %v", got, tc.want)
			}
			if got := w.Await(short(t), &tc.cached, &tc.live); got != tc.want {
				t.Errorf("a second Await = %v, want %v (kept while not superseded)", got, tc.want)
			}
		})
	}
}

// TestAwaitAsksOnlyAfterAskAfter: a cache that lags is waited out, not checked against the
// API server, until the write is AskAfter old; then the API server is asked once per Await.
func TestAwaitAsksOnlyAfterAskAfter(t *testing.T) {
	for _, tc := range []struct {
		name      string
		age       time.Duration
		wantReads int
		want      bool
	}{
		{name: "a write of a moment ago", age: 0, wantReads: 0, want: false},
		{name: "a write of just under AskAfter ago", age: AskAfter - time.Second, wantReads: 0, want: false},
		{name: "a write of AskAfter ago, superseded", age: AskAfter, wantReads: 1, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Deleted by another since: the cache and the API server both have none.
			live := &counted{}
			if got := recorded(false, tc.age).Await(short(t), &store{}, live); got != tc.want {
				t.Errorf("Await = %v, want %v", got, tc.want)
			}
			if live.reads != tc.wantReads {
				t.Errorf("the API server was read %d times, want %d", live.reads, tc.wantReads)
			}
		})
	}
}

func TestAwaitForgetsWritesNeverSeen(t *testing.T) {
	w := &Writes{}
	w.written = map[client.ObjectKey]write{{Namespace: "ns", Name: "cm"}: {obj: configMap("120"), at: time.Now().Add(-Forget - time.Second)}}
	if !w.Await(short(t), &store{}, &store{version: "120"}) {
		t.Fatal("a write older than Forget still holds the reconciler")
	}
	if len(w.written) != 0 {
		t.Errorf("kept %v", w.written)
	}
}

// TestGone: a write to an object the cache saw deleted since is not waited for, and costs
// no read of the API server; a delete of an older version or of another object of the
// name leaves it recorded.
func TestGone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deleted  *corev1.ConfigMap
		wantWait bool
	}{
		{name: "deleted at the version written", deleted: configMap("120")},
		{name: "deleted after another writer moved it on", deleted: configMap("135")},
		{name: "a delete of a version before the write (an event still to come)", deleted: configMap("99"), wantWait: true},
		{name: "another object of the name deleted", deleted: func() *corev1.ConfigMap { c := configMap("140"); c.UID = "b"; return c }(), wantWait: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := recorded(false, 0)
			w.Gone(tc.deleted)
			live := &counted{}
			if got := w.Await(short(t), &store{}, live); got == tc.wantWait {
				t.Errorf("Await = %v, want %v", got, !tc.wantWait)
			}
			if live.reads != 0 {
				t.Errorf("the API server was read %d times", live.reads)
			}
		})
	}
}

// TestGoneDuringAwait: a delete the cache sees while an Await is waiting for the write
// ends that wait, without a read of the API server.
func TestGoneDuringAwait(t *testing.T) {
	w := recorded(false, 0)
	go func() {
		time.Sleep(50 * time.Millisecond)
		w.Gone(configMap("120"))
	}()
	live := &counted{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	if !w.Await(ctx, &store{}, live) {
		t.Fatal("Await waits for a write to an object deleted since")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Await took %v after the delete", took)
	}
	if live.reads != 0 || len(w.gone) != 0 {
		t.Errorf("%d reads of the API server, %d deletes kept", live.reads, len(w.gone))
	}
}
