package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
)

// The reboot gate's part in the operator. How a gate that ended badly reaches the NMState:
// the controller (or, without one, the handler) records it on the Node it is about, in
// rebootgate.FailedAnnotation, and removes it once the node's policies are back. The
// operator reads the Nodes' metadata and reports every such node in the NMState's Degraded.
// So the report lives as long as its cause and goes with its node, survives any restart,
// needs no second writer of the NMState's status, and costs the operator a cache of Node
// metadata only (no status, no managed fields). The controller's Warning event on the Node
// says the same once, for kubectl describe.
//
// The gate's state is on the Nodes, and only the operator outlives the NMState: it removes
// what a gate left whenever the gate is off, and once the NMState is gone (its controller
// and handlers go with it, and nothing else would ever lift a taint).

// nodeMeta is a Node as the operator caches it: its metadata.
func nodeMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	return m
}

// gateAnnotated: the annotations hold a gate's start or its failure.
func gateAnnotated(a map[string]string) bool {
	_, since := a[rebootgate.SinceAnnotation]
	_, failed := a[rebootgate.FailedAnnotation]
	return since || failed
}

// gateChanged passes the Node events that change what a gate left on a node.
var gateChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return gateAnnotated(e.Object.GetAnnotations()) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
		return o[rebootgate.SinceAnnotation] != n[rebootgate.SinceAnnotation] || o[rebootgate.FailedAnnotation] != n[rebootgate.FailedAnnotation]
	},
	DeleteFunc:  func(e event.DeleteEvent) bool { return gateAnnotated(e.Object.GetAnnotations()) },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// gatedNodes are the nodes with something of a gate, from the metadata cache, by name.
func (r *Operator) gatedNodes(ctx context.Context) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.Client.List(ctx, list); err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(list.Items, func(n metav1.PartialObjectMetadata) bool { return !gateAnnotated(n.Annotations) })
	slices.SortFunc(out, func(a, b metav1.PartialObjectMetadata) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// gateFailures are the nodes whose gate ended without their policies, "node: what
// happened", sorted by node.
func gateFailures(nodes []metav1.PartialObjectMetadata) []string {
	var out []string
	for _, n := range nodes {
		if v, ok := n.Annotations[rebootgate.FailedAnnotation]; ok {
			_, msg, _ := rebootgate.ParseFailed(v)
			out = append(out, n.Name+": "+msg)
		}
	}
	return out
}

// clearGates removes what gates left on every node: the taint and the annotations, and
// nothing else, each Node in one patch conditional on its resource version (read
// uncached: the cache holds metadata, and the taints are one list, of which no other
// taint may be dropped).
func (r *Operator) clearGates(ctx context.Context, nodes []metav1.PartialObjectMetadata) error {
	if r.APIReader == nil {
		return nil
	}
	for _, m := range nodes {
		n := &corev1.Node{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: m.Name}, n); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		d := rebootgate.Clear(n)
		if !d.Changes() {
			continue
		}
		before := n.DeepCopy()
		d.ApplyTo(n)
		if err := r.Client.Patch(ctx, n, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("node %s: removing the reboot gate: %w", m.Name, err) // retried with the pass
		}
		ctrl.LoggerFrom(ctx).Info("reboot gate: removed from the node, the gate being off", "node", n.Name, "removed", d.Remove, "untainted", d.Untaint)
	}
	return nil
}

// gate reads the nodes' gates for the NMState: with the gate on, the failures to report;
// off, it clears them and reports none.
func (r *Operator) gate(ctx context.Context, nm *nmstatev1.NMState) ([]string, error) {
	nodes, err := r.gatedNodes(ctx)
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	if nm == nil || nm.Spec.RebootGate != nmstatev1.RebootGateTaint {
		return nil, r.clearGates(ctx, nodes)
	}
	return gateFailures(nodes), nil
}
