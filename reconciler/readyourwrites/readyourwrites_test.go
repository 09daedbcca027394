package readyourwrites

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cache serves one ConfigMap at a resourceVersion ("" for none).
type cache struct{ version string }

func (c *cache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if c.version == "" {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	obj.SetResourceVersion(c.version)
	return nil
}

func (c *cache) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func configMap(version string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ResourceVersion: version}}
}

func TestAwait(t *testing.T) {
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	for _, tc := range []struct {
		name    string
		cached  string
		deleted bool
		want    bool
	}{
		{name: "the cache at the version written", cached: "120", want: true},
		{name: "the cache past it: another writer moved the object on", cached: "135", want: true},
		{name: "the cache before it", cached: "99", want: false},
		{name: "not in the cache yet", cached: "", want: false},
		{name: "a delete, gone from the cache", cached: "", deleted: true, want: true},
		{name: "a delete, still in the cache", cached: "99", deleted: true, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Writes{}
			if tc.deleted {
				w.Deleted(configMap("120"))
			} else {
				w.Wrote(configMap("120"))
			}
			c := &cache{version: tc.cached}
			if got := w.Await(short(), c); got != tc.want {
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
			if !w.Await(short(), c) {
				t.Error("a later Await did not see the write the cache now shows")
			}
			if !w.Await(short(), &cache{version: "1"}) {
				t.Error("a write seen once is awaited again")
			}
		})
	}
}

func TestAwaitForgetsWritesNeverSeen(t *testing.T) {
	w := &Writes{}
	w.Wrote(configMap("120"))
	w.written[client.ObjectKey{Namespace: "ns", Name: "cm"}] = write{obj: configMap("120"), at: time.Now().Add(-Forget - time.Second)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if w.Await(ctx, &cache{}) {
		t.Fatal("Await saw a write the cache never showed")
	}
	if !w.Await(context.Background(), &cache{}) {
		t.Error("a write older than Forget still holds the reconciler")
	}
}
