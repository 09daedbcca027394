//go:build integration

package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/internal/cluster"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/simnode"
)

// nodeSeen is one version of a Node as a watch delivered it.
type nodeSeen struct {
	at      time.Time
	tainted bool
	since   string
	taints  []corev1.Taint
}

// nodeWatch records every version of one Node from when it starts, so that a spec can say
// what never happened to the node (it was never tainted) without waiting a while for it.
type nodeWatch struct {
	mu   sync.Mutex
	seen []nodeSeen
}

func watchNode(name string) *nodeWatch {
	GinkgoHelper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: k8s.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	w := &nodeWatch{}
	started := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		rv := ""
		for ctx.Err() == nil {
			opts := []client.ListOption{client.MatchingFields{"metadata.name": name}}
			if rv != "" {
				opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			}
			wi, err := wc.Watch(ctx, &corev1.NodeList{}, opts...)
			if started != nil {
				close(started)
				started = nil
			}
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				n, ok := ev.Object.(*corev1.Node)
				if !ok || ev.Type == watch.Error {
					continue
				}
				rv = n.ResourceVersion
				w.mu.Lock()
				w.seen = append(w.seen, nodeSeen{at: time.Now(), tainted: rebootgate.Tainted(n),
					since: n.Annotations[rebootgate.SinceAnnotation], taints: n.Spec.Taints})
				w.mu.Unlock()
			}
			wi.Stop()
		}
	}()
	<-started
	Eventually(func() int { w.mu.Lock(); defer w.mu.Unlock(); return len(w.seen) }, "10s", "5ms").Should(BeNumerically(">", 0),
		"the watch delivers the Node as it is")
	DeferCleanup(cancel)
	return w
}

// taintedAfter is how long after t the node was first seen tainted by a gate of boot.
func (w *nodeWatch) taintedAfter(t time.Time, boot string) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.seen {
		if s.at.After(t) && s.tainted && strings.HasSuffix(s.since, "/"+boot) {
			return s.at.Sub(t), true
		}
	}
	return 0, false
}

// everTainted: some version of the node had the gate's taint.
func (w *nodeWatch) everTainted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.ContainsFunc(w.seen, func(s nodeSeen) bool { return s.tainted })
}

// taintings counts the times the node went from untainted to tainted.
func (w *nodeWatch) taintings() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, was := 0, false
	for _, s := range w.seen {
		if s.tainted && !was {
			n++
		}
		was = s.tainted
	}
	return n
}

// sinces are the distinct gate starts the node was seen with.
func (w *nodeWatch) sinces() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.seen {
		if s.since != "" && !slices.Contains(out, s.since) {
			out = append(out, s.since)
		}
	}
	return out
}

// setBoot reports the node's boot ID, as its kubelet does after a reboot (status only).
func setBoot(name, boot string) {
	GinkgoHelper()
	Eventually(func() error {
		n := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
			return err
		}
		n.Status.NodeInfo.BootID = boot
		return k8s.Status().Update(context.Background(), n)
	}, "10s", "5ms").Should(Succeed())
}

// gateOf reads what the node shows of its gate: "tainted" or "untainted", then its
// annotations' values ("-" for none).
func gateOf(name string) func() string {
	return func() string {
		n := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
			return err.Error()
		}
		st := "untainted"
		if rebootgate.Tainted(n) {
			st = "tainted"
		}
		ann := func(k string) string {
			if v, ok := n.Annotations[k]; ok {
				return v
			}
			return "-"
		}
		return st + " since=" + ann(rebootgate.SinceAnnotation) + " failed=" + ann(rebootgate.FailedAnnotation)
	}
}

// nodeEvents lists the events about a Node as "type reason note (related kind/name)".
func nodeEvents(name string) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		Expect(k8s.List(context.Background(), list)).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Node" && e.Regarding.Name == name {
				rel := ""
				if e.Related != nil {
					rel = " (" + e.Related.Kind + "/" + e.Related.Name + ")"
				}
				out = append(out, e.Type+" "+e.Reason+" "+e.Note+rel)
			}
		}
		return out
	}
}

// The reboot gate against a real API server: the controller in this process and simulated
// nodes (the real handler, internal/node), each under its own service account's token and
// RBAC, with the admission policies of deploy/operand installed, as deployed. The kubelet's
// part, a new boot ID in the Node's status, is written by the specs.
var _ = Describe("the reboot gate", Ordered, Label("rebootgate"), func() {
	ctx := context.Background()
	var (
		cs      *kubernetes.Clientset
		ctrlCfg *rest.Config
		specs   int
	)

	tokenConfig := func(sa string, pod *corev1.Pod) *rest.Config {
		GinkgoHelper()
		var bound *authenticationv1.BoundObjectReference
		if pod != nil {
			bound = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
		}
		exp := int64(3600)
		tr, err := cs.CoreV1().ServiceAccounts("nmoverlay").CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp, BoundObjectRef: bound}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		rc := rest.AnonymousClientConfig(cfg)
		rc.BearerToken = tr.Status.Token
		return rc
	}

	// handlerConfig is the handler's on node: its service account's token, bound to its Pod
	// there (no kubelet runs the Pod: the API server needs it to exist to bind the token).
	handlerConfig := func(nodeName string) *rest.Config {
		GinkgoHelper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "handler-" + nodeName, Namespace: "nmoverlay"},
			Spec: corev1.PodSpec{ServiceAccountName: "nmoverlay-handler", NodeName: nodeName,
				Containers: []corev1.Container{{Name: "handler", Image: "nmoverlay"}}}}
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)))).To(Succeed())
		})
		return tokenConfig("nmoverlay-handler", pod)
	}

	// startController runs the cluster controller until the spec ends (or stop).
	startController := func(gate kit.Gate) (stop func() error) {
		GinkgoHelper()
		stop, err := kit.StartControllerWith(ctrlCfg, k8s.Scheme(), gate)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(stop)
		return stop
	}

	// id names the spec's nodes and policy.
	id := func() string { return fmt.Sprintf("gate%d", specs) }

	// gateNode is a Ready node in boot-1 with a running handler (lifting its gate when
	// gate is set); it goes when the spec ends.
	gateNode := func(name string, labels map[string]string, gate *node.RebootGate) *simnode.Node {
		GinkgoHelper()
		_, err := kit.ReadyNode(ctx, k8s, name, labels)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
		})
		setBoot(name, "boot-1")
		sn := simnode.New(name, handlerConfig(name), k8s.Scheme())
		sn.RebootGate = gate
		Expect(sn.Start()).To(Succeed())
		DeferCleanup(sn.Stop)
		return sn
	}

	// appliedPolicy creates the spec's policy for the nodes labelled gate=<id> and waits for
	// it to be Available on each of them in boot-1.
	appliedPolicy := func(nodes ...*simnode.Node) string {
		GinkgoHelper()
		name := id() + "-vlan"
		p := policy(name, map[string]string{"gate": id()}, `{"interfaces":[{"name":"gate0","type":"dummy","state":"up"}]}`)
		Expect(k8s.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, p))).To(Succeed()) })
		for _, n := range nodes {
			Eventually(kit.EnactmentSummary(k8s, n.Name, name), "20s").Should(HavePrefix("Available boot-1:"))
		}
		return name
	}

	selected := func() map[string]string { return map[string]string{"gate": id()} }

	BeforeAll(func() {
		var err error
		cs, err = kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		for _, o := range deployObjects() {
			switch o.GetKind() {
			case "Namespace":
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
			case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
				DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed()) })
			}
		}
		ctrlCfg = tokenConfig("nmoverlay-controller", nil)
		// The policies are enforced once the API server has compiled them: a change the
		// gate's policy refuses is refused.
		probe := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gate-probe"}}
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, probe))).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, probe))).To(Succeed()) })
		ctrlClient, err := client.New(ctrlCfg, client.Options{Scheme: k8s.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			n := &corev1.Node{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(probe), n); err != nil {
				return err
			}
			before := n.DeepCopy()
			n.Labels = map[string]string{"relabelled": "yes"}
			return ctrlClient.Patch(ctx, n, client.MergeFrom(before), client.DryRunAll)
		}, "30s", "50ms").Should(MatchError(ContainSubstring("nmoverlay-node-gate")))
	})

	BeforeEach(func() { specs++ })

	It("taints a rebooted node whose enactments are of its old boot until they are Available in the new one; never a node no policy selects", func() {
		startController(kit.Gate{On: true, Timeout: time.Minute})
		lift := &node.RebootGate{Timeout: time.Minute, Grace: time.Minute}
		a := gateNode(id()+"-a", selected(), lift)
		b := gateNode(id()+"-b", nil, lift)
		// What others wrote on the node stays as it is through every gate.
		n := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: a.Name}, n)).To(Succeed())
		before := n.DeepCopy()
		theirs := corev1.Taint{Key: "example.com/maintenance", Value: "planned", Effect: corev1.TaintEffectPreferNoSchedule}
		n.Spec.Taints = []corev1.Taint{theirs}
		n.Annotations = map[string]string{"example.com/owner": "team-a"}
		Expect(k8s.Patch(ctx, n, client.MergeFrom(before))).To(Succeed())
		p := appliedPolicy(a)
		wa, wb := watchNode(a.Name), watchNode(b.Name)
		var gateTaken []time.Duration // from a new boot ID in the Node's status to the taint, every reboot

		for i := 2; i <= 6; i++ {
			boot := fmt.Sprintf("boot-%d", i)
			// The kubelets report the new boot before the handlers run again: the node with
			// no policy first, so the controller (one worker, in order) decides it first.
			setBoot(b.Name, boot)
			reported := time.Now()
			setBoot(a.Name, boot)
			Eventually(func() bool { _, ok := wa.taintedAfter(reported, boot); return ok }, "10s", "5ms").Should(BeTrue(), "tainted in %s", boot)
			took, _ := wa.taintedAfter(reported, boot)
			gateTaken = append(gateTaken, took)
			GinkgoWriter.Printf("%s: tainted %s after its new boot ID was reported\n", boot, took)
			Expect(gateOf(a.Name)()).To(MatchRegexp(`^tainted since=\S+/` + boot + ` failed=-$`))
			Expect(gateOf(b.Name)()).To(Equal("untainted since=- failed=-"))

			Expect(a.Reboot(boot)).To(Succeed())
			Expect(b.Reboot(boot)).To(Succeed())
			Eventually(kit.EnactmentSummary(k8s, a.Name, p), "20s").Should(HavePrefix("Available " + boot + ":"))
			Eventually(gateOf(a.Name), "10s").Should(Equal("untainted since=- failed=-"))
			Expect(k8s.Get(ctx, client.ObjectKey{Name: a.Name}, n)).To(Succeed())
			Expect(n.Spec.Taints).To(Equal([]corev1.Taint{theirs}))
			Expect(n.Annotations).To(Equal(map[string]string{"example.com/owner": "team-a"}))
		}
		// The measure, printed (not asserted): from the Node's new boot ID (the status write
		// returning) to the watch delivering the Node with the taint.
		AddReportEntry("reboot gate: a new boot ID in the Node's status to the taint on it",
			fmt.Sprintf("median %s over %d reboots (each: %v)", kit.Median(gateTaken).Round(100*time.Microsecond), len(gateTaken), gateTaken),
			ReportEntryVisibilityAlways)
		Expect(wa.taintings()).To(Equal(5), "one gate per reboot")
		Expect(wb.everTainted()).To(BeFalse(), "no policy selects it")
		Expect(nodeEvents(a.Name)()).To(BeEmpty(), "a gate lifted with its policies back tells nothing")
	})

	It("taints every node of a mass reboot, under a stream of other writes; the race measured for the last", func() {
		// A power cut or a pool's rollout reboots many nodes at once: their kubelets report
		// the new boot together, the gate's one worker takes them in turn, and the API
		// server is busy with other writes meanwhile (here: ConfigMaps rewritten as fast as
		// writers can).
		const nodes, rounds, writers = 20, 3, 4
		startController(kit.Gate{On: true, Timeout: time.Minute})
		lift := &node.RebootGate{Timeout: time.Minute, Grace: time.Minute}
		sns := make([]*simnode.Node, nodes)
		watches := make([]*nodeWatch, nodes)
		for i := range sns {
			sns[i] = gateNode(fmt.Sprintf("%s-%02d", id(), i), selected(), lift)
			watches[i] = watchNode(sns[i].Name)
		}
		p := appliedPolicy(sns...)

		load, stopLoad := context.WithCancel(ctx)
		var writes sync.WaitGroup
		var written atomic.Int64
		for w := range writers {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-load-%d", id(), w), Namespace: metav1.NamespaceDefault}}
			Expect(k8s.Create(ctx, cm)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, cm))).To(Succeed()) })
			writes.Add(1)
			go func() {
				defer writes.Done()
				for i := 0; load.Err() == nil; i++ {
					before := cm.DeepCopy()
					cm.Data = map[string]string{"i": fmt.Sprint(i)}
					if k8s.Patch(load, cm, client.MergeFrom(before)) == nil {
						written.Add(1)
					}
				}
			}()
		}
		loadStart := time.Now()

		var all, last []time.Duration
		for r := 2; r < 2+rounds; r++ {
			boot := fmt.Sprintf("boot-%d", r)
			reported := make([]time.Time, nodes)
			var wg sync.WaitGroup
			for i, sn := range sns {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					setBoot(sn.Name, boot)
					reported[i] = time.Now()
				}()
			}
			wg.Wait()
			var slowest time.Duration
			for i, w := range watches {
				Eventually(func() bool { _, ok := w.taintedAfter(reported[i].Add(-time.Second), boot); return ok }, "20s", "5ms").Should(BeTrue(), "%s tainted in %s", sns[i].Name, boot)
				// From its own report's return; a watch may deliver the taint before the
				// status write returned to its writer (took < 0): counted as 0.
				took, _ := w.taintedAfter(reported[i].Add(-time.Second), boot)
				took = max(took-time.Second, 0)
				all = append(all, took)
				slowest = max(slowest, took)
			}
			last = append(last, slowest)
			for _, sn := range sns {
				Expect(sn.Reboot(boot)).To(Succeed())
			}
			for i, sn := range sns {
				Eventually(kit.EnactmentSummary(k8s, sn.Name, p), "30s").Should(HavePrefix("Available "+boot+":"), sn.Name)
				Eventually(gateOf(sns[i].Name), "10s").Should(Equal("untainted since=- failed=-"), sn.Name)
			}
		}
		stopLoad()
		writes.Wait()
		rate := float64(written.Load()) / time.Since(loadStart).Seconds()
		Expect(written.Load()).To(BeNumerically(">", 0), "the load wrote")
		for _, w := range watches {
			Expect(w.taintings()).To(Equal(rounds), "one gate per reboot")
		}
		AddReportEntry("reboot gate under load: a new boot ID in the Node's status to the taint on it",
			fmt.Sprintf("%d nodes rebooting at once, %d rounds, %.0f other writes/s: median %s, the last node of a round %v",
				nodes, rounds, rate, kit.Median(all).Round(100*time.Microsecond), last),
			ReportEntryVisibilityAlways)
	})

	It("is started by a replica that is not the leader: the leader may be down with the node that rebooted", func() {
		// A leader grants the policy's rollout, and goes down with the node it ran on.
		stopLeader := startController(kit.Gate{})
		lift := &node.RebootGate{Timeout: time.Minute, Grace: time.Minute}
		a := gateNode(id()+"-a", selected(), lift)
		p := appliedPolicy(a)
		Expect(stopLeader()).To(Succeed())
		// Its lease is still held (it could not release it): the replica left never leads
		// in this spec.
		lease := id() + "-lease"
		holder, held := "the-leader-on-the-rebooted-node", int32(3600)
		now := metav1.NewMicroTime(time.Now())
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lease, Namespace: metav1.NamespaceDefault},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &held, AcquireTime: &now, RenewTime: &now}}
		Expect(k8s.Create(ctx, l)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, l))).To(Succeed()) })
		startController(kit.Gate{On: true, Timeout: time.Minute, Lease: lease})
		wa := watchNode(a.Name)

		setBoot(a.Name, "boot-2")
		Eventually(gateOf(a.Name), "10s", "5ms").Should(MatchRegexp(`^tainted since=\S+/boot-2 failed=-$`))
		Expect(a.Reboot("boot-2")).To(Succeed())
		Eventually(kit.EnactmentSummary(k8s, a.Name, p), "20s").Should(HavePrefix("Available boot-2:"))
		Eventually(gateOf(a.Name), "10s").Should(Equal("untainted since=- failed=-"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(l), l)).To(Succeed())
		Expect(*l.Spec.HolderIdentity).To(Equal(holder), "the controller never led")
		Expect(wa.taintings()).To(Equal(1))
	})

	It("is off by default: a rebooted node is not tainted", func() {
		startController(kit.Gate{})
		a := gateNode(id()+"-a", selected(), nil)
		p := appliedPolicy(a)
		wa := watchNode(a.Name)
		setBoot(a.Name, "boot-2")
		Expect(a.Reboot("boot-2")).To(Succeed())
		Eventually(kit.EnactmentSummary(k8s, a.Name, p), "20s").Should(HavePrefix("Available boot-2:"))
		Expect(wa.everTainted()).To(BeFalse(), "tainted with the gate off")
		Expect(gateOf(a.Name)()).To(Equal("untainted since=- failed=-"))
	})

	It("lifts a gate at its timeout with a Warning on the Node naming what it waited for; a restarted controller keeps the gate's start", func() {
		const timeout = 3 * time.Second
		stop := startController(kit.Gate{On: true, Timeout: timeout})
		a := gateNode(id()+"-a", selected(), &node.RebootGate{Timeout: timeout, Grace: time.Hour})
		p := appliedPolicy(a)
		wa := watchNode(a.Name)
		Expect(a.Stop()).To(Succeed()) // its handler is gone
		setBoot(a.Name, "boot-2")
		Eventually(gateOf(a.Name), "10s", "5ms").Should(HavePrefix("tainted since="))
		Eventually(wa.sinces, "10s", "5ms").Should(HaveLen(1))
		started := wa.sinces()
		Expect(stop()).To(Succeed())
		startController(kit.Gate{On: true, Timeout: timeout})

		want := fmt.Sprintf("not Available in boot boot-2 after %s: %s", timeout, p)
		Eventually(gateOf(a.Name), "20s").Should(Equal("untainted since=- failed=" + rebootgate.FormatFailed("boot-2", want)))
		Expect(wa.sinces()).To(Equal(started), "the restarted controller kept the gate's start")
		Eventually(nodeEvents(a.Name), "10s").Should(ConsistOf(
			"Warning " + cluster.ReasonReconvergenceTimedOut + " " + want + "; the nmoverlay.io/reconverging taint is removed"))

		// The handler back: its policy Available in the new boot, the failure's record goes
		// (and with it the NMState's Degraded), and the gate does not start again.
		Expect(a.Reboot("boot-2")).To(Succeed())
		Eventually(kit.EnactmentSummary(k8s, a.Name, p), "20s").Should(HavePrefix("Available boot-2:"))
		Eventually(gateOf(a.Name), "10s").Should(Equal("untainted since=- failed=-"))
		Expect(wa.taintings()).To(Equal(1))
	})

	It("lifts a gate when a policy fails in the new boot, with a Warning on the Node naming the policy", func() {
		startController(kit.Gate{On: true, Timeout: time.Minute})
		a := gateNode(id()+"-a", selected(), &node.RebootGate{Timeout: time.Minute, Grace: time.Hour})
		p := appliedPolicy(a)
		setBoot(a.Name, "boot-2")
		Eventually(gateOf(a.Name), "10s", "5ms").Should(HavePrefix("tainted since="))
		// The node came back without its overlay: its handler refuses every policy.
		a.SetDegraded("the overlay did not verify at boot")
		Expect(a.Reboot("boot-2")).To(Succeed())
		Eventually(gateOf(a.Name), "20s").Should(MatchRegexp(`^untainted since=- failed=boot-2/policy ` + p +
			` failed in boot boot-2: refused: the node's keyfile overlay is degraded`))
		Eventually(nodeEvents(a.Name), "10s").Should(ConsistOf(SatisfyAll(
			HavePrefix("Warning "+cluster.ReasonReconvergenceFailed+" policy "+p+" failed in boot boot-2: refused"),
			HaveSuffix("(NodeNetworkConfigurationPolicy/"+p+")"))))
	})

	It("is lifted by the node's handler alone while the controller is down: at once when its policies are back, after its grace when one fails", func() {
		stop := startController(kit.Gate{On: true, Timeout: time.Minute})
		lift := &node.RebootGate{Timeout: time.Minute, Grace: time.Second}
		a := gateNode(id()+"-a", selected(), lift)
		c := gateNode(id()+"-c", selected(), lift)
		p := appliedPolicy(a, c)
		setBoot(a.Name, "boot-2")
		setBoot(c.Name, "boot-2")
		Eventually(gateOf(a.Name), "10s", "5ms").Should(HavePrefix("tainted since="))
		Eventually(gateOf(c.Name), "10s", "5ms").Should(HavePrefix("tainted since="))
		Expect(stop()).To(Succeed())

		Expect(a.Reboot("boot-2")).To(Succeed())
		Eventually(kit.EnactmentSummary(k8s, a.Name, p), "20s").Should(HavePrefix("Available boot-2:"))
		Eventually(gateOf(a.Name), "10s").Should(Equal("untainted since=- failed=-"))

		c.SetDegraded("the overlay did not verify at boot")
		Expect(c.Reboot("boot-2")).To(Succeed())
		Eventually(gateOf(c.Name), "20s").Should(MatchRegexp(`^untainted since=- failed=boot-2/policy ` + p + ` failed in boot boot-2: refused`))
		Expect(nodeEvents(c.Name)()).To(BeEmpty(), "the controller, down, told nothing; the handler tells the failure on the policy")
	})

	It("holds the handler to its own node's gate and both to the gate's taint and annotations", func() {
		x, y := id()+"-x", id()+"-y"
		for _, name := range []string{x, y} {
			_, err := kit.ReadyNode(ctx, k8s, name, map[string]string{"role": "worker"})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() {
				Expect(client.IgnoreNotFound(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}))).To(Succeed())
			})
		}
		handlerX, err := client.New(handlerConfig(x), client.Options{Scheme: k8s.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		controller, err := client.New(ctrlCfg, client.Options{Scheme: k8s.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		change := func(c client.Client, name string, edit func(*corev1.Node), opts ...client.PatchOption) error {
			n := &corev1.Node{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
			before := n.DeepCopy()
			edit(n)
			return c.Patch(ctx, n, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), opts...)
		}
		gate := func(n *corev1.Node) {
			rebootgate.Decision{Taint: true, Set: map[string]string{rebootgate.SinceAnnotation: rebootgate.FormatSince(time.Now(), "b2")}}.ApplyTo(n)
		}
		lift := func(n *corev1.Node) { rebootgate.Clear(n).ApplyTo(n) }

		Expect(change(controller, x, gate)).To(Succeed(), "the controller starts a gate on any node")
		Expect(change(controller, y, gate)).To(Succeed())
		Expect(change(handlerX, x, lift)).To(Succeed(), "the handler lifts its own node's")
		expectDenied(change(handlerX, y, lift, client.DryRunAll), metav1.StatusReasonForbidden, "nmoverlay-node-gate", x, y)
		for _, tc := range []struct {
			what string
			edit func(*corev1.Node)
			say  string
		}{
			{"another taint", func(n *corev1.Node) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/x", Effect: corev1.TaintEffectNoSchedule})
			}, "spec.taints"},
			{"the gate's taint, evicting", func(n *corev1.Node) {
				rebootgate.Clear(n).ApplyTo(n) // the API server's not-ready taint stays
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: rebootgate.TaintKey, Effect: corev1.TaintEffectNoExecute})
			}, "it never evicts"},
			{"another annotation", func(n *corev1.Node) { metav1.SetMetaDataAnnotation(&n.ObjectMeta, "example.com/x", "y") }, "metadata.annotations"},
			{"a label", func(n *corev1.Node) { n.Labels["role"] = "infra" }, "not its labels"},
			{"cordoning", func(n *corev1.Node) { n.Spec.Unschedulable = true }, "unschedulable"},
		} {
			expectDenied(change(handlerX, x, tc.edit, client.DryRunAll), metav1.StatusReasonForbidden, "nmoverlay-node-gate", tc.say)
			expectDenied(change(controller, y, tc.edit, client.DryRunAll), metav1.StatusReasonForbidden, "nmoverlay-node-gate", tc.say)
		}
		Expect(change(controller, y, lift)).To(Succeed())
	})
})
