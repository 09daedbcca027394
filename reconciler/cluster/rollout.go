package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"golang.org/x/sync/errgroup"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/reconciler/readyourwrites"
)

// This file is the rollout phase: the controller grants rollout slots on the nodes'
// enactments (shared.RolloutSlotAnnotation). A node waiting for one makes no request: the
// grant reaches it as a watch event on its own enactment. The slots in use are derived
// from the enactments and Nodes at each pass; no counter is kept, so nothing can leak, and
// a new leader goes on from what it reads.

// DefaultSlotTimeout is how long a grant holds its slot while the node has not reported
// the generation: a handler that died mid-apply frees it after this.
const DefaultSlotTimeout = 5 * time.Minute

// grantsInFlight bounds the grant writes one pass has in flight at once.
const grantsInFlight = 16

// clockSkew is how far ahead of this replica's clock a grant may be dated (another replica
// wrote it) and still count: beyond it the clock was wrong, and the grant would otherwise
// never time out.
const clockSkew = time.Minute

// slotPlan is what the rollout of a policy's current generation needs now.
type slotPlan struct {
	// Max is how many selected nodes may apply it at once, of Matching.
	Max, Matching int
	// Holding are the nodes whose grant holds a slot; Grant those to grant one now;
	// Waiting the Ready nodes that wait for one. Each sorted by name.
	Holding, Grant, Waiting []string
	// Recheck is when the soonest held grant times out (0: none held).
	Recheck time.Duration
}

// planSlots decides the grants of policy's current generation. A node is done when its
// enactment reports the generation Available or Failing; a node's grant holds a slot while
// it is not done, the node is Ready and the grant is younger than timeout (and not dated
// ahead of now by more than clockSkew). Free slots go to the Ready nodes not yet granted,
// by node name. A grant that stopped holding (NotReady, timed out) is not renewed: the node
// applies it when it comes back. NotReady nodes are not granted: they are unavailable
// already, and a node that rebooted applies its policies again without a slot.
func planSlots(policy *nmstatev1.NodeNetworkConfigurationPolicy, nodes []corev1.Node,
	enactments []v1beta1.NodeNetworkConfigurationEnactment, timeout time.Duration, now time.Time) slotPlan {
	type nodeSlot struct {
		done, granted bool
		grantedAt     time.Time // the latest grant of the generation
	}
	byNode := map[string]*nodeSlot{}
	for _, e := range enactments {
		name := e.Labels[shared.NodeLabel]
		s := byNode[name]
		if s == nil {
			s = &nodeSlot{}
			byNode[name] = s
		}
		if e.Status.PolicyGeneration == policy.Generation && (shared.IsTrue(e.Status.Conditions, shared.EnactmentAvailable, "") ||
			shared.IsTrue(e.Status.Conditions, shared.EnactmentFailing, "")) {
			s.done = true
		}
		if gen, at, ok := shared.RolloutSlot(e.Annotations); ok && gen == policy.Generation {
			s.granted = true
			if at.After(s.grantedAt) {
				s.grantedAt = at
			}
		}
	}
	var p slotPlan
	var candidates []string
	for _, n := range nodes {
		if !shared.SelectsNode(policy.Spec.NodeSelector, n.Labels) {
			continue
		}
		p.Matching++
		s := byNode[n.Name]
		if s == nil {
			s = &nodeSlot{}
		}
		switch {
		case s.done:
		case s.granted:
			age := now.Sub(s.grantedAt)
			if isReady(&n) && age <= timeout && -age <= clockSkew {
				p.Holding = append(p.Holding, n.Name)
				if left := timeout - age; p.Recheck == 0 || left < p.Recheck {
					p.Recheck = max(left, time.Second)
				}
			}
		case isReady(&n):
			candidates = append(candidates, n.Name)
		}
	}
	slices.Sort(p.Holding)
	slices.Sort(candidates)
	p.Max = maxUnavailable(policy.Spec.MaxUnavailable, p.Matching)
	free := max(p.Max-len(p.Holding), 0)
	p.Grant, p.Waiting = candidates[:min(free, len(candidates))], candidates[min(free, len(candidates)):]
	return p
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// maxUnavailable resolves the policy's maxUnavailable (default "50%", rounded up, at least 1).
func maxUnavailable(v *intstr.IntOrString, matching int) int {
	val := intstr.FromString("50%")
	if v != nil {
		val = *v
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&val, matching, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// grantSlots writes the plan's grants: the annotation on the node's enactment, which is
// created (named <node>.<policy>, labelled, owned by the Node) when the node has none yet.
// A node waiting for its first generation of a policy has no enactment: the grant is its
// creation, so a node-policy pair costs two writes, the grant and the node's result.
func (r *PolicyController) grantSlots(ctx context.Context, w *readyourwrites.Writes, policy *nmstatev1.NodeNetworkConfigurationPolicy,
	nodes []corev1.Node, enactments []v1beta1.NodeNetworkConfigurationEnactment, now time.Time) (slotPlan, error) {
	p := planSlots(policy, nodes, enactments, r.slotTimeout(), now)
	if len(p.Grant) == 0 {
		return p, nil
	}
	enactmentOf := func(nodeName string) int {
		return slices.IndexFunc(enactments, func(e v1beta1.NodeNetworkConfigurationEnactment) bool {
			return e.Labels[shared.NodeLabel] == nodeName
		})
	}
	// The mark is cleared before the read, so a delete seen during it marks the policy again.
	if slices.ContainsFunc(p.Grant, func(nodeName string) bool { return enactmentOf(nodeName) < 0 }) && r.undoubt(policy.Name) {
		if err := r.stillServed(ctx, policy); err != nil {
			r.doubt(policy.Name)
			return p, err
		}
	}
	grant := shared.FormatRolloutSlot(policy.Generation, now)
	// The grants of a wave go out together: one at a time, a wave of 100 nodes waited
	// out 100 round trips to a loaded API server before the next policy's.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(grantsInFlight)
	for _, nodeName := range p.Grant {
		i := enactmentOf(nodeName)
		g.Go(func() error {
			if i >= 0 {
				e := enactments[i].DeepCopy()
				before := e.DeepCopy()
				metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, grant)
				if err := r.Client.Patch(gctx, e, client.MergeFrom(before)); err != nil {
					return err
				}
				w.Wrote(e)
				return nil
			}
			n := &nodes[slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == nodeName })]
			e, err := r.createEnactment(gctx, n, policy, grant)
			if err != nil {
				return err
			}
			w.Wrote(e)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return p, err
	}
	ctrl.LoggerFrom(ctx).Info("rollout slots granted", "policy", policy.Name, "generation", policy.Generation,
		"nodes", p.Grant, "holding", len(p.Holding), "waiting", len(p.Waiting), "maxUnavailable", p.Max)
	return p, nil
}

// errPolicyGone: the API server no longer has the policy the cache holds.
var errPolicyGone = errors.New("the policy is gone from the API server, not yet from the cache")

// stillServed returns errPolicyGone unless the API server still has policy (one uncached
// read, before a pass creates enactments for a doubted policy). The cache may hold a policy
// deleted since: its watch re-established after the API server was away, or etcd restored
// to before the policy. Enactments created for it would be deleted by their nodes and
// created again by the next pass, until the cache caught up. Asked only after an
// enactment's delete: asked in every pass that creates, the read delayed grants enough to
// split nodes' applies (20 nodes × 5 policies: 2.62–2.65 writes per pair, not 2.49–2.50).
func (r *PolicyController) stillServed(ctx context.Context, policy *nmstatev1.NodeNetworkConfigurationPolicy) error {
	if r.APIReader == nil {
		return nil
	}
	live := &nmstatev1.NodeNetworkConfigurationPolicy{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(policy), live)
	if apierrors.IsNotFound(err) || err == nil && live.UID != policy.UID {
		return errPolicyGone
	}
	return err
}

// createEnactment creates the node's enactment of policy with its grant. Its name is
// <node>.<policy> as kubernetes-nmstate names it; with dots in names two pairs can share
// that (node worker with policy a.x, node worker.a with policy x), and the second gets a
// random suffix: enactments are found by their labels, never by name.
func (r *PolicyController) createEnactment(ctx context.Context, n *corev1.Node, policy *nmstatev1.NodeNetworkConfigurationPolicy,
	grant string) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	name := shared.EnactmentKey(n.Name, policy.Name)
	taken := &v1beta1.NodeNetworkConfigurationEnactment{}
	err := r.Client.Get(ctx, types.NamespacedName{Name: name}, taken)
	if err == nil && taken.Labels[shared.NodeLabel] == n.Name && taken.Labels[shared.PolicyLabel] == policy.Name {
		// The node's own, which the list did not hold: never a second enactment for it.
		return taken, nil
	}
	if err == nil {
		name += "-" + randomSuffix()
		ctrl.LoggerFrom(ctx).Info("enactment name taken by another pair's enactment; using another name", "node", n.Name,
			"policy", policy.Name, "taken", taken.Name, "takenBy", taken.Labels[shared.NodeLabel]+"/"+taken.Labels[shared.PolicyLabel], "name", name)
		if r.Events != nil {
			r.Events.Eventf(policy, n, corev1.EventTypeWarning, "EnactmentNameTaken", "Rollout",
				"node %s: enactment name %s is taken by node %q (policy %q); this node's enactment is %s",
				n.Name, taken.Name, taken.Labels[shared.NodeLabel], taken.Labels[shared.PolicyLabel], name)
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{shared.NodeLabel: n.Name, shared.PolicyLabel: policy.Name},
		Annotations: map[string]string{shared.RolloutSlotAnnotation: grant},
	}}
	// Owned by the Node: the garbage collector removes it with the node.
	if err := controllerutil.SetOwnerReference(n, e, r.Client.Scheme()); err != nil {
		return nil, err
	}
	return e, r.Client.Create(ctx, e)
}

// randomSuffix makes a fallback enactment name: 8 characters of [a-z0-9].
func randomSuffix() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func (r *PolicyController) slotTimeout() time.Duration {
	if r.SlotTimeout <= 0 {
		return DefaultSlotTimeout
	}
	return r.SlotTimeout
}
