package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/deploy"
)

// An upgrade whose operand no longer has an object an earlier release's had (a renamed
// binding, a role no longer needed) leaves it behind, owned by the NMState. The operator
// deletes it once the new operand is applied: an object of a kind the operand has,
// labelled as the operator's, controlled by the NMState, that the operand does not have.
// Its RBAC names what it may delete, as it names what it may write: every name a release's
// operand had stays in deploy/operator.yaml's delete rules when a release drops it
// (deploy's TestOperatorMayDeleteEveryReleasedOperandObject checks it).

// Prunable are the objects among existing to delete: labelled as the operator's,
// controlled by the NMState whose UID is owner, and not among desired (by kind, namespace
// and name). Sorted by key, for a stable log.
func Prunable(desired, existing []*unstructured.Unstructured, owner types.UID) []*unstructured.Unstructured {
	want := map[string]bool{}
	for _, o := range desired {
		want[pruneKey(o)] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range existing {
		if o.GetLabels()[ManagedByLabel] != ManagedBy || want[pruneKey(o)] || o.GetDeletionTimestamp() != nil {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(o); ref == nil || ref.UID != owner {
			continue
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(pruneKey(a), pruneKey(b)) })
	return out
}

// pruneKey is an object's identity across releases: its group and kind, not its version
// (a release may move a kind to a newer version).
func pruneKey(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().GroupKind().String() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// prune deletes what Prunable says of the cached objects of the operand's kinds. Each
// delete is conditioned on the object's UID, so a re-created one is never taken for it.
func (r *Operator) prune(ctx context.Context, desired []*unstructured.Unstructured, env Environment, owner types.UID) error {
	var existing []*unstructured.Unstructured
	type listing struct {
		reader client.Reader
		opts   []client.ListOption
	}
	mine := client.MatchingLabels{ManagedByLabel: ManagedBy}
	lists := map[schema.GroupVersionKind]listing{}
	for gvk := range kindsOf(r.Base, false) {
		lists[gvk] = listing{r.Client, []client.ListOption{mine}}
	}
	// The optional kinds where served: uncached, in the operand's namespace, once per
	// operator and CRD (what an earlier release left is there when this one starts).
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prunedOnce == nil {
		r.prunedOnce = map[types.UID]bool{}
	}
	var listedOnce []types.UID
	for gvk := range kindsOf(r.Base, true) {
		if uid := env.CRDs[deploy.CRDOf(gvk.GroupKind())]; uid != "" && !r.prunedOnce[uid] && r.APIReader != nil {
			lists[gvk] = listing{r.APIReader, []client.ListOption{mine, client.InNamespace(operandNamespace(r.Base))}}
			listedOnce = append(listedOnce, uid)
		}
	}
	for gvk, li := range lists {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := li.reader.List(ctx, l, li.opts...); err != nil {
			return fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range l.Items {
			existing = append(existing, &l.Items[i])
		}
	}
	for _, o := range Prunable(desired, existing, owner) {
		uid := o.GetUID()
		if err := r.Client.Delete(ctx, o, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s %s, which the operand no longer has: %w", o.GetKind(), o.GetName(), err)
		}
		ctrl.LoggerFrom(ctx).Info("pruned: the operand no longer has it", "kind", o.GetKind(), "namespace", o.GetNamespace(), "name", o.GetName(),
			"version", o.GetLabels()[VersionLabel])
	}
	for _, uid := range listedOnce {
		r.prunedOnce[uid] = true
	}
	return nil
}

// operandNamespace is the namespace of the operand's namespaced objects (the handler's).
func operandNamespace(base []*unstructured.Unstructured) string {
	for _, o := range base {
		if o.GetKind() == "DaemonSet" {
			return o.GetNamespace()
		}
	}
	return ""
}
