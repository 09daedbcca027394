package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strconv"
	"sync"
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
	"github.com/nmoverlay/nmoverlay/internal/readyourwrites"
)

// This file is the rollout phase: the controller creates an enactment for every node a
// policy selects, and grants rollout slots on them (shared.RolloutSlotAnnotation). A node
// waiting for one makes no request: the grant reaches it as a watch event on its own
// enactment. The slots in use, and whether the rollout is aborted, are derived from the
// enactments and Nodes at each pass; no counter is kept, so nothing can leak, and a new
// leader goes on from what it reads.

// DefaultSlotTimeout is how long a grant holds its slot while the node has not reported
// the generation: a handler that died mid-apply frees it after this.
const DefaultSlotTimeout = 5 * time.Minute

// grantsInFlight bounds the grant writes one pass has in flight at once.
const grantsInFlight = 16

// clockSkew is how far ahead of this replica's clock a grant may be dated (another replica
// wrote it) and still count: beyond it the clock was wrong, and the grant would otherwise
// never time out.
const clockSkew = time.Minute

// slotDecision is what the rollout of a policy's current generation needs now, node by node.
// Each list is sorted by node name.
type slotDecision struct {
	// Max is how many selected nodes may apply it at once, of Matching.
	Max, Matching int
	// Holding: applying under a grant that holds a slot. Grant: granted one now.
	Holding, Grant []string
	// Pending: selected nodes not granted, waiting for a slot (NotReady ones included);
	// Abort: the same, once the generation failed on a node: they are not granted.
	Pending, Abort []string
	// FailedOn: the selected nodes whose enactment reports the generation Failing. While
	// any does, no slot is granted for it.
	FailedOn []string
	// Refused: the selected nodes that refused the generation because their keyfile
	// overlay is not in use (a node still booting onto it, or moving from
	// kubernetes-nmstate). Neither a failure nor a candidate: no slot, no write; each takes
	// its turn once its handler withdraws the refusal.
	Refused []string
	// Requeued: nodes that lost a grant of the generation (their enactment deleted):
	// granted again only after every node that has not had one.
	Requeued []string
	// Recheck is when the soonest held grant times out (0: none held).
	Recheck time.Duration
}

// decideSlots decides the rollout of policy's current generation on the nodes it selects:
//   - a node is done when its enactment reports the generation Available or Failing;
//   - a grant of the generation holds a slot while the node is not done, is Ready, and the
//     grant is younger than timeout (and not dated ahead of now by more than clockSkew); a
//     grant that stopped holding is not renewed: the node applies it when it comes back;
//   - once the generation failed on a selected node, no slot is granted for it, and every
//     node not granted is aborted (those applying finish);
//   - otherwise free slots go to Ready nodes without a grant: first those that never had
//     one, then the requeued (requeued, or the enactment's RolloutRequeuedAnnotation), each
//     by name; the rest are pending.
//
// requeued names the nodes whose granted enactment was deleted (node → generation), which
// the controller remembers until it has recreated it.
func decideSlots(policy *nmstatev1.NodeNetworkConfigurationPolicy, nodes []corev1.Node,
	enactments []v1beta1.NodeNetworkConfigurationEnactment, requeued map[string]int64, timeout time.Duration, now time.Time) slotDecision {
	type nodeSlot struct {
		done, failed, granted, requeued, refused bool
		grantedAt                                time.Time // the latest grant of the generation
	}
	byNode := map[string]*nodeSlot{}
	for _, e := range enactments {
		name := e.Labels[shared.NodeLabel]
		s := byNode[name]
		if s == nil {
			s = &nodeSlot{}
			byNode[name] = s
		}
		if e.Status.PolicyGeneration == policy.Generation {
			if shared.IsTrue(e.Status.Conditions, shared.EnactmentAvailable, "") {
				s.done = true
			}
			// A node whose overlay is not in use could not try: no failure of the
			// generation, and its handler's report is left as it is.
			if shared.RefusedWhileDegraded(e.Status.Conditions) {
				s.refused = true
			} else if shared.IsTrue(e.Status.Conditions, shared.EnactmentFailing, "") {
				s.done, s.failed = true, true
			}
		}
		if gen, at, ok := shared.RolloutSlot(e.Annotations); ok && gen == policy.Generation {
			s.granted = true
			if at.After(s.grantedAt) {
				s.grantedAt = at
			}
		}
		if e.Annotations[shared.RolloutRequeuedAnnotation] == strconv.FormatInt(policy.Generation, 10) {
			s.requeued = true
		}
	}
	var p slotDecision
	var fresh, again, notReady []string
	for _, n := range nodes {
		if !shared.SelectsNode(policy.Spec.NodeSelector, n.Labels) {
			continue
		}
		p.Matching++
		s := byNode[n.Name]
		if s == nil {
			s = &nodeSlot{}
		}
		if gen, ok := requeued[n.Name]; ok && gen == policy.Generation {
			s.requeued = true
		}
		if s.requeued && !s.granted {
			p.Requeued = append(p.Requeued, n.Name)
		}
		switch {
		case s.refused:
			p.Refused = append(p.Refused, n.Name)
		case s.failed:
			p.FailedOn = append(p.FailedOn, n.Name)
		case s.done:
		case s.granted:
			age := now.Sub(s.grantedAt)
			if shared.NodeReady(&n) && age <= timeout && -age <= clockSkew {
				p.Holding = append(p.Holding, n.Name)
				if left := timeout - age; p.Recheck == 0 || left < p.Recheck {
					p.Recheck = max(left, time.Second)
				}
			}
		case !shared.NodeReady(&n):
			notReady = append(notReady, n.Name)
		case s.requeued:
			again = append(again, n.Name)
		default:
			fresh = append(fresh, n.Name)
		}
	}
	for _, l := range [][]string{p.Holding, p.FailedOn, p.Refused, p.Requeued, fresh, again, notReady} {
		slices.Sort(l)
	}
	p.Max = maxUnavailable(policy.Spec.MaxUnavailable, p.Matching)
	candidates := slices.Concat(fresh, again)
	if len(p.FailedOn) > 0 {
		p.Abort = slices.Sorted(slices.Values(slices.Concat(candidates, notReady)))
		return p
	}
	free := min(max(p.Max-len(p.Holding), 0), len(candidates))
	p.Grant = slices.Sorted(slices.Values(candidates[:free]))
	p.Pending = slices.Sorted(slices.Values(slices.Concat(candidates[free:], notReady)))
	return p
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

// rollOut carries out the plan on the nodes' enactments, each in one write, only where it
// changes something: a grant (shared.RolloutSlotAnnotation) with the status Progressing, or
// the status Pending or Aborted. A selected node without an enactment gets one, created
// with that status: every selected node shows one, and a node-policy pair costs two writes
// when granted at once (the creation, the node's result) and three when it waits (the
// creation, the grant, the result). The handlers write their own results; the controller
// writes only what a node has not started: so its writes are conditional on the
// enactment's resource version, and a node's report in between wins. It returns the
// policy's enactments as they are after the pass.
func (r *PolicyController) rollOut(ctx context.Context, w *readyourwrites.Writes, policy *nmstatev1.NodeNetworkConfigurationPolicy,
	nodes []corev1.Node, enactments []v1beta1.NodeNetworkConfigurationEnactment, p slotDecision, now time.Time) ([]v1beta1.NodeNetworkConfigurationEnactment, error) {
	enactmentOf := func(nodeName string) int {
		return slices.IndexFunc(enactments, func(e v1beta1.NodeNetworkConfigurationEnactment) bool {
			return e.Labels[shared.NodeLabel] == nodeName
		})
	}
	type change struct {
		node, condType, message string
		grant                   bool
	}
	var changes []change
	for _, n := range p.Grant {
		changes = append(changes, change{node: n, condType: shared.EnactmentProgressing, message: shared.MessageApplying, grant: true})
	}
	for _, n := range p.Pending {
		changes = append(changes, change{node: n, condType: shared.EnactmentPending, message: shared.MessagePending})
	}
	for _, n := range p.Abort {
		changes = append(changes, change{node: n, condType: shared.EnactmentAborted})
	}
	// Only what changes: a node already Pending (or Aborted) for this generation is not
	// written again.
	changes = slices.DeleteFunc(changes, func(c change) bool {
		i := enactmentOf(c.node)
		if i < 0 || c.grant {
			return false
		}
		e := &enactments[i]
		return e.Status.PolicyGeneration == policy.Generation && shared.IsTrue(e.Status.Conditions, c.condType, "")
	})
	if len(changes) == 0 {
		return enactments, nil
	}
	// The mark is cleared before the read, so a delete seen during it marks the policy again.
	if slices.ContainsFunc(changes, func(c change) bool { return enactmentOf(c.node) < 0 }) && r.undoubt(policy.Name) {
		if err := r.stillServed(ctx, policy); err != nil {
			r.doubt(policy.Name)
			return enactments, err
		}
	}
	grant := shared.FormatRolloutSlot(policy.Generation, now)
	requeued := map[string]bool{}
	for _, n := range p.Requeued {
		requeued[n] = true
	}
	after := slices.Clone(enactments)
	var created []v1beta1.NodeNetworkConfigurationEnactment
	var mu sync.Mutex
	// The writes of a wave go out together: one at a time, a wave of 100 nodes waited out
	// 100 round trips to a loaded API server before the next policy's.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(grantsInFlight)
	for _, c := range changes {
		i := enactmentOf(c.node)
		g.Go(func() error {
			prepare := func(e *v1beta1.NodeNetworkConfigurationEnactment) {
				if c.grant {
					metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, grant)
					delete(e.Annotations, shared.RolloutRequeuedAnnotation)
				} else if requeued[c.node] {
					metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutRequeuedAnnotation, strconv.FormatInt(policy.Generation, 10))
				}
				message := c.message
				if c.condType == shared.EnactmentAborted {
					message = shared.AbortedMessage(e.Name, p.FailedOn)
				}
				e.Status.PolicyGeneration = policy.Generation
				shared.SetEnactment(&e.Status.Conditions, c.condType, message)
			}
			if i < 0 {
				n := &nodes[slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == c.node })]
				e, err := r.createEnactment(gctx, n, policy, prepare)
				if err != nil {
					return err
				}
				w.Wrote(e)
				mu.Lock()
				created = append(created, *e)
				mu.Unlock()
				return nil
			}
			e := enactments[i].DeepCopy()
			before := e.DeepCopy()
			prepare(e)
			if err := r.Client.Patch(gctx, e, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
				return err
			}
			w.Wrote(e)
			mu.Lock()
			after[i] = *e
			mu.Unlock()
			return nil
		})
	}
	err := g.Wait()
	after = append(after, created...)
	if err != nil {
		return after, err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("policy", policy.Name, "generation", policy.Generation)
	if len(p.Grant) > 0 {
		log.Info("rollout slots granted", "nodes", p.Grant, "holding", len(p.Holding), "pending", len(p.Pending), "maxUnavailable", p.Max)
	}
	if aborted := slices.ContainsFunc(changes, func(c change) bool { return c.condType == shared.EnactmentAborted }); aborted {
		log.Info("rollout aborted: the generation failed on a node; no slot is granted for it", "failedOn", p.FailedOn, "aborted", p.Abort)
	}
	return after, nil
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

// createEnactment creates the node's enactment of policy, named, labelled and owned, with
// what prepare sets. Its name is <node>.<policy> as kubernetes-nmstate names it; with dots in
// names two pairs can share that (node worker with policy a.x, node worker.a with policy x),
// and the second gets a random suffix: enactments are found by their labels, never by name.
// If the node's own is there already (the list did not hold it), that one is returned
// unchanged: a node never has a second enactment of a policy.
func (r *PolicyController) createEnactment(ctx context.Context, n *corev1.Node, policy *nmstatev1.NodeNetworkConfigurationPolicy,
	prepare func(*v1beta1.NodeNetworkConfigurationEnactment)) (*v1beta1.NodeNetworkConfigurationEnactment, error) {
	name := shared.EnactmentKey(n.Name, policy.Name)
	taken := &v1beta1.NodeNetworkConfigurationEnactment{}
	err := r.Client.Get(ctx, types.NamespacedName{Name: name}, taken)
	if err == nil && taken.Labels[shared.NodeLabel] == n.Name && taken.Labels[shared.PolicyLabel] == policy.Name {
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
		Name:   name,
		Labels: map[string]string{shared.NodeLabel: n.Name, shared.PolicyLabel: policy.Name},
	}}
	prepare(e)
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
