package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
)

// GatePod is the workload the reboot step creates on the rebooted node while its gate
// holds: a pause container selected by the node's hostname, tolerating nothing.
const GatePod = "demo-workload"

// GateTimeline is one reboot with the gate on as the API showed it (watches), each time
// from the reboot's start on this machine's clock; 0: not seen.
type GateTimeline struct {
	// BootPosted: the kubelet's new boot ID in the Node's status; Tainted: the gate's
	// taint on the Node after that; Available: the policy Available in the new boot;
	// Untainted: the taint gone after that.
	BootPosted, Tainted, Available, Untainted time.Duration
	// PodCreated: the workload created (once the taint was seen); PodBound: the scheduler
	// bound it to the node; PodRunning: it ran there.
	PodCreated, PodBound, PodRunning time.Duration
	// Unschedulable is the scheduler's last message on the pod before it bound it (which
	// names no taint).
	Unschedulable string
	// OtherTaints are the other NoSchedule taints the Node carried in the new boot
	// before the pod was bound (the node lifecycle's not-ready, say).
	OtherTaints []string
}

// Race is the window the gate leaves: from the new boot ID to the taint.
func (t GateTimeline) Race() time.Duration { return t.Tainted - t.BootPosted }

// Ungated is the window without the gate: from the new boot ID, when the scheduler may
// place pods on the node again, to the policy Available.
func (t GateTimeline) Ungated() time.Duration { return t.Available - t.BootPosted }

// gateWatch times a reboot of one node with the gate on, and creates the workload the
// moment it sees the gate's taint.
type gateWatch struct {
	c              client.WithWatch
	node, policy   string
	oldBoot, image string
	start          time.Time

	mu      sync.Mutex
	t       GateTimeline
	newBoot string
	err     error
	created bool

	cancel context.CancelFunc
	done   sync.WaitGroup
}

func (r *run) watchGate(ctx context.Context, node, policy, oldBoot string, start time.Time) *gateWatch {
	ctx, cancel := context.WithCancel(ctx)
	g := &gateWatch{c: r.c.Client, node: node, policy: policy, oldBoot: oldBoot, image: r.c.SandboxImage(), start: start, cancel: cancel}
	g.follow(ctx, &corev1.NodeList{}, []client.ListOption{client.MatchingFields{"metadata.name": node}}, g.nodeSeen)
	g.follow(ctx, &v1beta1.NodeNetworkConfigurationEnactmentList{},
		[]client.ListOption{client.MatchingLabels{shared.NodeLabel: node, shared.PolicyLabel: policy}}, g.enactmentSeen)
	g.follow(ctx, &corev1.PodList{}, []client.ListOption{client.InNamespace(metav1.NamespaceDefault), client.MatchingFields{"metadata.name": GatePod}}, g.podSeen)
	return g
}

// follow watches list's objects, calling seen with each as it arrives (and again after a
// watch ends: from where it ended).
func (g *gateWatch) follow(ctx context.Context, list client.ObjectList, opts []client.ListOption, seen func(context.Context, client.Object)) {
	g.done.Add(1)
	go func() {
		defer g.done.Done()
		rv := ""
		for ctx.Err() == nil {
			o := opts
			if rv != "" {
				o = append(slices.Clone(opts), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			}
			w, err := g.c.Watch(ctx, list, o...)
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok || ev.Type == watch.Error {
					rv = "" // expired: from the current state
					continue
				}
				rv = obj.GetResourceVersion()
				if ev.Type != watch.Deleted {
					seen(ctx, obj)
				}
			}
			w.Stop()
		}
	}()
}

func (g *gateWatch) since() time.Duration { return time.Since(g.start) }

func (g *gateWatch) nodeSeen(ctx context.Context, o client.Object) {
	n := o.(*corev1.Node)
	g.mu.Lock()
	defer g.mu.Unlock()
	boot := n.Status.NodeInfo.BootID
	if boot == "" || boot == g.oldBoot {
		return
	}
	if g.t.BootPosted == 0 {
		g.t.BootPosted, g.newBoot = g.since(), boot
	}
	tainted := rebootgate.Tainted(n)
	switch {
	case tainted && g.t.Tainted == 0:
		g.t.Tainted = g.since()
		if !g.created {
			g.created = true
			go g.createPod(ctx)
		}
	case !tainted && g.t.Tainted != 0 && g.t.Untainted == 0:
		g.t.Untainted = g.since()
	}
	if g.t.PodBound == 0 {
		for _, t := range n.Spec.Taints {
			if t.Key != rebootgate.TaintKey && t.Effect == corev1.TaintEffectNoSchedule && !slices.Contains(g.t.OtherTaints, t.Key) {
				g.t.OtherTaints = append(g.t.OtherTaints, t.Key)
			}
		}
	}
}

func (g *gateWatch) enactmentSeen(_ context.Context, o client.Object) {
	e := o.(*v1beta1.NodeNetworkConfigurationEnactment)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.t.Available == 0 && g.newBoot != "" && e.Status.BootID == g.newBoot && shared.IsTrue(e.Status.Conditions, shared.EnactmentAvailable, "") {
		g.t.Available = g.since()
	}
}

func (g *gateWatch) podSeen(_ context.Context, o client.Object) {
	p := o.(*corev1.Pod)
	g.mu.Lock()
	defer g.mu.Unlock()
	if p.Spec.NodeName == "" {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				g.t.Unschedulable = c.Message
			}
		}
		return
	}
	if g.t.PodBound == 0 {
		g.t.PodBound = g.since()
	}
	if g.t.PodRunning == 0 && p.Status.Phase == corev1.PodRunning {
		g.t.PodRunning = g.since()
	}
}

// createPod creates the workload: what an administrator's deployment would place on the
// node, selected by its hostname.
func (g *gateWatch) createPod(ctx context.Context) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: GatePod, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{corev1.LabelHostname: g.node},
			Containers:                    []corev1.Container{{Name: "workload", Image: g.image, ImagePullPolicy: corev1.PullIfNotPresent}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	err := g.c.Create(ctx, pod)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.t.PodCreated = g.since()
	if err != nil {
		g.err = fmt.Errorf("creating pod %s: %w", GatePod, err)
	}
}

// timeline is what the watches saw so far.
func (g *gateWatch) timeline() (GateTimeline, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.t, g.err
}

func (g *gateWatch) stop() {
	g.cancel()
	g.done.Wait()
}

// check is the gate's promise on the timeline: the node tainted in its new boot, the pod
// created meanwhile kept off it until the policy was back, and then run.
func (t GateTimeline) check() error {
	switch {
	case t.BootPosted == 0:
		return fmt.Errorf("the kubelet never posted the new boot ID")
	case t.Tainted == 0:
		return fmt.Errorf("the node was never tainted %s in its new boot", rebootgate.TaintKey)
	case t.PodCreated == 0:
		return fmt.Errorf("pod %s was not created", GatePod)
	case t.Available == 0:
		return fmt.Errorf("the policy was never Available in the new boot")
	case t.Untainted == 0:
		return fmt.Errorf("the taint was never lifted")
	case t.PodBound == 0 || t.PodRunning == 0:
		return fmt.Errorf("pod %s never ran on the node (bound after %s)", GatePod, t.PodBound)
	case t.PodBound < t.Available:
		return fmt.Errorf("pod %s was bound %s after the reboot began, before the policy was Available (%s)", GatePod, t.PodBound, t.Available)
	case !strings.Contains(t.Unschedulable, "untolerated taint"):
		return fmt.Errorf("the scheduler did not keep pod %s off the node for a taint: %q", GatePod, t.Unschedulable)
	case len(t.OtherTaints) > 0:
		// The scheduler names no taint ("had untolerated taint(s)"): the gate's must have
		// been the only one.
		return fmt.Errorf("the node carried other NoSchedule taints while pod %s waited: %v", GatePod, t.OtherTaints)
	}
	return nil
}

// showLeader says where the controller's replicas run, and which one leads: a reboot of
// the leader's node takes it down, and the other replica decides the gate meanwhile.
func (r *run) showLeader(ctx context.Context, rebooted string) {
	l := &coordinationv1.Lease{}
	if err := r.k8s.Get(ctx, client.ObjectKey{Namespace: r.w.Namespace, Name: controllerLease}, l); err != nil || l.Spec.HolderIdentity == nil {
		return
	}
	leader, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	pods := &corev1.PodList{}
	if err := r.k8s.List(ctx, pods, client.InNamespace(r.w.Namespace), client.MatchingLabels{"app.kubernetes.io/name": r.w.Controller}); err != nil {
		return
	}
	for _, p := range pods.Items {
		role := "replica"
		if p.Name == leader {
			role = "leader"
		}
		gone := ""
		if p.Spec.NodeName == rebooted {
			gone = ", rebooted with it"
		}
		r.printf("the controller's %s %s runs on %s%s\n", role, p.Name, p.Spec.NodeName, gone)
	}
}
