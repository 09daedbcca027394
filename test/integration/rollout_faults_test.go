//go:build integration

package integration_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/simnode"
)

// Faults of the rollout itself (the node tier's fault specs cover the network): real
// handlers on simulated nodes and the controller as two leader-elected processes, as its
// Deployment runs it. A ghost node holds the policy's only slot, so the rollout is
// mid-way when the fault lands.
var _ = Describe("the rollout under faults", Label("faults"), Ordered, func() {
	ctx := context.Background()
	selector := map[string]string{"rollout-faults": "yes"}
	var (
		nodes       []*simnode.Node
		controllers []*exec.Cmd
		ctlLogs     []string
	)
	readyNode := func(name string) {
		GinkgoHelper()
		_, err := kit.ReadyNode(ctx, k8s, name, selector)
		Expect(err).NotTo(HaveOccurred())
	}
	// ghostClaims makes the ghost node hold the policy's slot, as a handler granted it and
	// mid-apply would.
	ghostClaims := func(policy string) {
		GinkgoHelper()
		e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: shared.EnactmentKey("rf-ghost", policy),
			Labels:      map[string]string{shared.NodeLabel: "rf-ghost", shared.PolicyLabel: policy},
			Annotations: map[string]string{shared.RolloutSlotAnnotation: shared.FormatRolloutSlot(1, time.Now())}}}
		Expect(k8s.Create(ctx, e)).To(Succeed())
	}
	ghostDone := func(policy string) {
		GinkgoHelper()
		e := &v1beta1.NodeNetworkConfigurationEnactment{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: shared.EnactmentKey("rf-ghost", policy)}, e)).To(Succeed())
		e.Status.PolicyGeneration = 1
		e.Status.Conditions = []metav1.Condition{{Type: shared.EnactmentAvailable, Status: metav1.ConditionTrue,
			Reason: shared.ReasonSuccessfullyConfigured, Message: "applied", LastTransitionTime: metav1.Now()}}
		Expect(k8s.Update(ctx, e)).To(Succeed())
	}
	rollout := func(name string) {
		GinkgoHelper()
		one := intstr.FromInt32(1)
		p := policy(name, selector, `{"interfaces":[{"name":"eth9","type":"ethernet","mtu":1400}]}`)
		p.Spec.MaxUnavailable = &one
		Expect(k8s.Create(ctx, p)).To(Succeed())
		Eventually(policyCondition(name), "15s").Should(HaveSuffix("Policy is progressing 0/3 nodes finished, 2 pending"))
	}
	finished := func(name string) {
		GinkgoHelper()
		for _, n := range []string{"rf-a", "rf-b"} {
			Eventually(enactment(n, name), "45s").Should(HaveEnactmentCondition(shared.EnactmentAvailable, shared.ReasonSuccessfullyConfigured, ""))
		}
	}

	BeforeAll(func() {
		for _, name := range []string{"rf-a", "rf-b", "rf-ghost"} {
			readyNode(name)
		}
		for _, name := range []string{"rf-a", "rf-b"} {
			n := simnode.New(name, cfg, k8s.Scheme())
			Expect(n.Start()).To(Succeed())
			nodes = append(nodes, n)
		}
		DeferCleanup(func() {
			for _, n := range nodes {
				Expect(n.Stop()).To(Succeed())
			}
		})

		// Two replicas of cmd/controller, leader-elected as deployed: only the leader starts its
		// workers ("Starting workers" in its log).
		dir := GinkgoT().TempDir()
		bin, err := kit.Binary("cmd/controller")
		Expect(err).NotTo(HaveOccurred())
		user, err := env.AddUser(envtest.User{Name: "nmoverlay-controller", Groups: []string{"system:masters"}}, nil)
		Expect(err).NotTo(HaveOccurred())
		kc, err := user.KubeConfig()
		Expect(err).NotTo(HaveOccurred())
		kubeconfig := filepath.Join(dir, "kubeconfig")
		Expect(os.WriteFile(kubeconfig, kc, 0o600)).To(Succeed())
		for i := range 2 {
			logPath := filepath.Join(dir, "controller-"+string(rune('a'+i))+".log")
			log, err := os.Create(logPath)
			Expect(err).NotTo(HaveOccurred())
			cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--leader-election-namespace", "default",
				"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
			cmd.Stdout, cmd.Stderr = log, log
			Expect(cmd.Start()).To(Succeed())
			controllers, ctlLogs = append(controllers, cmd), append(ctlLogs, logPath)
		}
		DeferCleanup(func() {
			for _, c := range controllers {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		})
	})

	It("a node deleted mid-rollout frees its slot", func() {
		ghostClaims("rf-deleted")
		rollout("rf-deleted")
		Expect(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rf-ghost"}})).To(Succeed())
		finished("rf-deleted")
		readyNode("rf-ghost") // for the specs after this one
	})

	It("a handler restarted while it waits for a slot leaves no slot stuck", func() {
		ghostClaims("rf-restart")
		rollout("rf-restart")
		Expect(nodes[0].Stop()).To(Succeed())
		Expect(nodes[0].Start()).To(Succeed())
		Consistently(enactment("rf-a", "rf-restart"), "2s").Should(SatisfyAll(
			HaveEnactmentCondition(shared.EnactmentPending, shared.ReasonMaxUnavailableLimitReached, shared.MessagePending),
			HaveField("Annotations", Not(HaveKey(shared.RolloutSlotAnnotation)))), "granted a slot while the ghost holds the only one")
		ghostDone("rf-restart")
		finished("rf-restart")
	})

	It("the controller's leader is killed mid-rollout: the other replica takes over and the rollout finishes", func() {
		leader := -1
		Eventually(func() int {
			for i, l := range ctlLogs {
				if b, _ := os.ReadFile(l); strings.Contains(string(b), "Starting workers") {
					leader = i
				}
			}
			return leader
		}, "30s").Should(BeNumerically(">=", 0), "no controller replica leads")
		ghostClaims("rf-leader")
		rollout("rf-leader")
		Expect(controllers[leader].Process.Signal(syscall.SIGKILL)).To(Succeed())
		_ = controllers[leader].Wait()
		killed := time.Now()
		ghostDone("rf-leader")
		finished("rf-leader")
		// The lease of the killed leader expires (15 s) and the other replica writes the status.
		Eventually(policyCondition("rf-leader"), "60s").Should(HavePrefix("Available=SuccessfullyConfigured"))
		GinkgoWriter.Println("policy status Available", time.Since(killed).Round(100*time.Millisecond), "after the leader was killed")
		b, _ := os.ReadFile(ctlLogs[1-leader])
		Expect(string(b)).To(ContainSubstring("Starting workers"), "the other replica never led")
	})
})
