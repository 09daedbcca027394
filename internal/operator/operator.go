package operator

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/deploy"
)

// Operator applies the operand for the NMState singleton and reports on it.
type Operator struct {
	// Client reads the NMStates and the operand objects from the cache (CacheOptions) and
	// writes.
	Client client.Client
	// Base is the operand as deploy.Operand renders it, in apply order.
	Base []*unstructured.Unstructured
	// APIReader reads Nodes uncached, to clear what a reboot gate left on them (the cache
	// holds their metadata only), and lists the operand's objects of optional kinds (not
	// cached: their CRDs may come and go); without it neither is done.
	APIReader client.Reader
	// InfrastructureServed and APIServerServed say whether OpenShift's Infrastructure and
	// APIServer APIs are served (looked up once at start): the Environment reads them.
	InfrastructureServed, APIServerServed bool

	mu sync.Mutex
	// applied notes, per object, what was last applied and the object the API server
	// returned, so that a pass applies only what changed since, on either side: the CR's
	// spec (a new desired hash) or the object itself (drift: a new fingerprint).
	applied map[string]appliedNote
	// prunedOnce notes the CRDs (by UID) whose kinds' objects prune listed and cleared.
	prunedOnce map[types.UID]bool
}

type appliedNote struct{ desired, object [sha256.Size]byte }

// CacheOptions limit the operator's cache to the objects it applies (by their managed-by
// label; the namespaced ones in namespace; not those of optional kinds, whose CRDs may be
// missing), the NMStates, and the metadata of CRDs.
func CacheOptions(namespace string, base []*unstructured.Unstructured) cache.Options {
	sel := labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedBy})
	by := map[client.Object]cache.ByObject{}
	for gvk, namespaced := range kindsOf(base, false) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		o := cache.ByObject{Label: sel}
		if namespaced {
			o.Namespaces = map[string]cache.Config{namespace: {}}
		}
		by[u] = o
	}
	// Nodes, for their reboot gates (rebootgate.go): metadata only, without the managed
	// fields the kubelet's status writes fill.
	by[nodeMeta()] = cache.ByObject{Transform: cache.TransformStripManagedFields()}
	// CRDs, for whether the optional kinds are served (environment.go).
	by[crdMeta()] = cache.ByObject{Transform: cache.TransformStripManagedFields()}
	return cache.Options{ByObject: by}
}

// kindsOf are the kinds of the operand's objects that every cluster serves (optional
// false) or those that need another project's CRD (true), each with whether it is
// namespaced.
func kindsOf(base []*unstructured.Unstructured, optional bool) map[schema.GroupVersionKind]bool {
	kinds := map[schema.GroupVersionKind]bool{}
	for _, o := range base {
		if (deploy.CRDOf(o.GroupVersionKind().GroupKind()) != "") == optional {
			kinds[o.GroupVersionKind()] = o.GetNamespace() != ""
		}
	}
	return kinds
}

// SetupWithManager reconciles the NMStates, and the singleton again whenever an object it
// owns changes (drift is corrected; a rollout's progress is reported).
func (r *Operator) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).Named("nmstate").For(&nmstatev1.NMState{})
	for gvk := range kindsOf(r.Base, false) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		b = b.Owns(u)
	}
	// A node's gate, started, ended or cleared, changes what the singleton reports (or,
	// with it gone, what is to be cleared).
	singleton := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nmstatev1.NMStateName}}}
	})
	b = b.WatchesMetadata(nodeMeta(), singleton, builder.WithPredicates(gateChanged))
	// The Environment: an optional kind's CRD installed or removed, the platform's topology
	// or TLS profile changed. The objects of optional kinds are not watched: an edit to one
	// is undone when the operator next applies it (a new NMState spec, Environment, or
	// operator).
	crds := crdNames(r.Base)
	b = b.WatchesMetadata(crdMeta(), singleton, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return crds[o.GetName()]
	})))
	for gvk, served := range map[schema.GroupVersionKind]bool{InfrastructureGVK: r.InfrastructureServed, APIServerGVK: r.APIServerServed} {
		if served {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			b = b.Watches(u, singleton)
		}
	}
	return b.Complete(r)
}

// Reconcile applies the operand for the singleton and writes its status once; any other
// NMState is only told that it is ignored. A deleted NMState needs nothing: the garbage
// collector removes what it owns.
func (r *Operator) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nm := &nmstatev1.NMState{}
	if err := r.Client.Get(ctx, req.NamespacedName, nm); err != nil {
		if apierrors.IsNotFound(err) && req.Name == nmstatev1.NMStateName {
			// Its controller and handlers are going with it: nothing else would lift a gate.
			_, err := r.gate(ctx, nil)
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nm.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("nmstate", nm.Name, "generation", nm.Generation))
	if nm.Name != nmstatev1.NMStateName {
		return reconcile.Result{}, r.writeStatus(ctx, nm, ignoredConditions(nm.Name, nm.Generation))
	}
	var obs observed
	var desired []*unstructured.Unstructured
	env, err := r.environment(ctx)
	if err != nil {
		obs.applyErr = err // what is applied stays as it is
	} else {
		desired, obs.applyErr = r.apply(ctx, nm, env)
	}
	if obs.applyErr == nil {
		// What an earlier release's operand had and this one's has not goes once this
		// one's is in place.
		obs.applyErr = r.prune(ctx, desired, env, nm.UID)
	}
	if obs.handler, obs.controller, err = r.workloads(ctx); err != nil {
		return reconcile.Result{}, errors.Join(obs.applyErr, err)
	}
	if obs.gateFailures, err = r.gate(ctx, nm); err != nil {
		return reconcile.Result{}, errors.Join(obs.applyErr, err)
	}
	// An apply error is returned too: the pass is retried with backoff.
	return reconcile.Result{}, errors.Join(obs.applyErr, r.writeStatus(ctx, nm, conditions(obs, nm.Generation)))
}

// apply server-side applies every object that differs from what was last applied, in
// the operand's order; it stops at the first error, which names the object.
func (r *Operator) apply(ctx context.Context, nm *nmstatev1.NMState, env Environment) ([]*unstructured.Unstructured, error) {
	desired, err := Desired(r.Base, nm, env)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied == nil {
		r.applied = map[string]appliedNote{}
	}
	for _, o := range desired {
		key := keyOf(o)
		crd := deploy.CRDOf(o.GroupVersionKind().GroupKind())
		want, err := digest([]any{o.Object, env.CRDs[crd]})
		if err != nil {
			return nil, err
		}
		if crd != "" {
			if r.applied[key].desired == want {
				continue // not cached: what was applied is taken to be there
			}
		} else if r.unchanged(ctx, o, key, want) {
			continue
		}
		if err := r.Client.Patch(ctx, o, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			delete(r.applied, key)
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		fp, err := fingerprint(o)
		if err != nil {
			return nil, err
		}
		r.applied[key] = appliedNote{want, fp}
		ctrl.LoggerFrom(ctx).Info("applied", "kind", o.GetKind(), "namespace", o.GetNamespace(), "name", o.GetName(),
			"resourceVersion", o.GetResourceVersion())
	}
	return desired, nil
}

// unchanged says whether the cached object o names is as this operator last applied it,
// with the same desired digest want.
func (r *Operator) unchanged(ctx context.Context, o *unstructured.Unstructured, key string, want [sha256.Size]byte) bool {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(o.GroupVersionKind())
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return false // absent, or unreadable: the apply says which
	}
	fp, err := fingerprint(cur)
	return err == nil && r.applied[key] == (appliedNote{want, fp})
}

func keyOf(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().String() + "/" + o.GetNamespace() + "/" + o.GetName()
}

func digest(v any) ([sha256.Size]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// fingerprint digests an object as stored, but for what changes without anyone editing it:
// its status, resourceVersion and managed fields (the status writers' timestamps).
func fingerprint(o *unstructured.Unstructured) ([sha256.Size]byte, error) {
	c := o.DeepCopy()
	delete(c.Object, "status")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	return digest(c.Object)
}

// workloads are the handler's DaemonSet and the controller's Deployment as cached; nil
// when not there.
func (r *Operator) workloads(ctx context.Context) (*appsv1.DaemonSet, *appsv1.Deployment, error) {
	ds, err := cached[appsv1.DaemonSet](ctx, r.Client, r.Base, "DaemonSet")
	if err != nil {
		return nil, nil, err
	}
	d, err := cached[appsv1.Deployment](ctx, r.Client, r.Base, "Deployment")
	if err != nil {
		return nil, nil, err
	}
	return ds, d, nil
}

// cached reads the operand's object of kind (the cache holds it as unstructured) as a T;
// nil when it is not there.
func cached[T any](ctx context.Context, c client.Client, base []*unstructured.Unstructured, kind string) (*T, error) {
	for _, b := range base {
		if b.GetKind() != kind {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(b.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), u); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		t := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
			return nil, err
		}
		return t, nil
	}
	return nil, nil
}

// writeStatus patches nm's status once, and only if the conditions changed.
func (r *Operator) writeStatus(ctx context.Context, nm *nmstatev1.NMState, conds []metav1.Condition) error {
	old := nm.DeepCopy()
	for _, c := range conds {
		meta.SetStatusCondition(&nm.Status.Conditions, c)
	}
	nm.Status.ObservedGeneration = nm.Generation
	if equality.Semantic.DeepEqual(old.Status, nm.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, nm, client.MergeFrom(old)); err != nil {
		return err
	}
	if a := meta.FindStatusCondition(nm.Status.Conditions, nmstatev1.NMStateAvailable); a != nil {
		if o := meta.FindStatusCondition(old.Status.Conditions, nmstatev1.NMStateAvailable); o == nil || o.Status != a.Status || o.Reason != a.Reason {
			ctrl.LoggerFrom(ctx).Info("status", "available", a.Status, "reason", a.Reason, "message", a.Message)
		}
	}
	return nil
}
