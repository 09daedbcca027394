//go:build integration

package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/adoption"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// A cluster as kubernetes-nmstate leaves it, written again from its public API (its
// operator and handler as OLM installs them in openshift-nmstate, its policies, and the
// enactments and states its handler writes), on an API server of its own. nmoverlay
// migrate reads it, changes nothing, and says whether the move can start and what stays
// persistent on each node.
var _ = Describe("nmoverlay migrate on a cluster running kubernetes-nmstate", Ordered, func() {
	var (
		c          client.Client
		ctx        = context.Background()
		bin        string
		kubeconfig string
	)
	migrate := func(args ...string) (string, int) {
		GinkgoHelper()
		out, err := exec.Command(bin, append([]string{"migrate", "--kubeconfig", kubeconfig}, args...)...).Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		Expect(err).NotTo(HaveOccurred())
		return string(out), 0
	}
	enact := func(node, policy, desired, condition, message string) {
		GinkgoHelper()
		e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: node + "." + policy,
			Labels: map[string]string{shared.NodeLabel: node, shared.PolicyLabel: policy}}}
		if err := c.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
			Expect(client.IgnoreNotFound(err)).To(Succeed())
			Expect(c.Create(ctx, e)).To(Succeed())
		}
		e.Status.DesiredState = shared.State{Raw: []byte(desired)}
		e.Status.Conditions = nil
		for _, t := range []string{shared.EnactmentAvailable, shared.EnactmentFailing, shared.EnactmentProgressing} {
			st := metav1.ConditionFalse
			if t == condition {
				st = metav1.ConditionTrue
			}
			e.Status.Conditions = append(e.Status.Conditions, metav1.Condition{Type: t, Status: st, Reason: "Test", Message: message,
				LastTransitionTime: metav1.Now()})
		}
		Expect(c.Update(ctx, e)).To(Succeed()) // no status subresource, as kubernetes-nmstate's CRD
	}
	const (
		brex = `{"interfaces":[{"name":"br-ex","type":"ovs-bridge","state":"up","bridge":{"port":[{"name":"bond0"},{"name":"br-ex"}]}},
  {"name":"br-ex","type":"ovs-interface","state":"up"},
  {"name":"bond0","type":"bond","state":"up","link-aggregation":{"mode":"active-backup","port":["eth0","eth1"]}}]}`
		storage = `{"interfaces":[{"name":"bond0.200","type":"vlan","state":"up","vlan":{"base-iface":"bond0","id":200}}]}`
		current = `{"interfaces":[{"name":"br-ex","type":"ovs-interface","state":"up","ipv4":{"enabled":true,"address":[{"ip":"192.0.2.10","prefix-length":24}]}}],
  "routes":{"running":[{"destination":"0.0.0.0/0","next-hop-address":"192.0.2.1","next-hop-interface":"br-ex","table-id":254}]}}`
	)

	BeforeAll(func() {
		a, err := kit.StartAPI()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(a.Stop)
		c = a.Client
		kubeconfig, err = a.AdminKubeconfig(GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		bin, err = kit.Binary("cmd/nmoverlay")
		Expect(err).NotTo(HaveOccurred())

		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-nmstate"}})).To(Succeed())
		one := int32(1)
		labels := map[string]string{"name": "kubernetes-nmstate-operator"}
		Expect(c.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "nmstate-operator", Namespace: "openshift-nmstate",
			Labels: map[string]string{"app": "kubernetes-nmstate-operator"}},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "registry.redhat.io/openshift4/kubernetes-nmstate-rhel9-operator:v4.18"}}}}}})).To(Succeed())
		handler := map[string]string{"name": "nmstate-handler", "component": "kubernetes-nmstate-handler", "app": "kubernetes-nmstate"}
		Expect(c.Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "nmstate-handler", Namespace: "openshift-nmstate",
			Labels: map[string]string{"app": "kubernetes-nmstate", "component": "kubernetes-nmstate-handler"}},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "nmstate-handler"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: handler},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nmstate-handler", Image: "registry.redhat.io/openshift4/ose-kubernetes-nmstate-handler-rhel9:v4.18"}}}}}})).To(Succeed())
		Expect(c.Create(ctx, &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: "nmstate"}})).To(Succeed())

		for _, n := range []struct{ name, ip string }{{"worker-0", "192.0.2.10"}, {"worker-1", "192.0.2.11"}} {
			node, err := kit.ReadyNode(ctx, c, n.name, map[string]string{"node-role.kubernetes.io/worker": ""})
			Expect(err).NotTo(HaveOccurred())
			node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}}
			Expect(c.Status().Update(ctx, node)).To(Succeed())
			nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: n.name}}
			Expect(c.Create(ctx, nns)).To(Succeed())
			nns.Status.CurrentState = shared.State{Raw: []byte(current)}
			Expect(c.Status().Update(ctx, nns)).To(Succeed())
		}
		for name, desired := range map[string]string{"br-ex": brex, "storage": storage} {
			p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
			p.Spec.DesiredState = shared.State{Raw: []byte(desired)}
			Expect(c.Create(ctx, p)).To(Succeed())
			for _, node := range []string{"worker-0", "worker-1"} {
				enact(node, name, desired, shared.EnactmentAvailable, "")
			}
		}
	})

	It("finds kubernetes-nmstate, its policies Available on each node, and what stays persistent", func() {
		out, code := migrate("-o", "json")
		Expect(code).To(Equal(0), out)
		var a adoption.Assessment
		Expect(json.Unmarshal([]byte(out), &a)).To(Succeed(), out)
		Expect(a.Blocking).To(BeEmpty())
		Expect(a.Components).To(ConsistOf(
			HaveField("Name", "nmstate-operator"),
			SatisfyAll(HaveField("Kind", "DaemonSet"), HaveField("Name", "nmstate-handler"),
				HaveField("Images", ConsistOf("registry.redhat.io/openshift4/ose-kubernetes-nmstate-handler-rhel9:v4.18")))))
		Expect(a.NMStates).To(Equal([]string{"nmstate"}))
		Expect(a.CRDs).To(HaveLen(4))
		Expect(a.Policies).To(ConsistOf(
			adoption.PolicyReport{Name: "br-ex", Nodes: map[string]string{"worker-0": "Available", "worker-1": "Available"}},
			adoption.PolicyReport{Name: "storage", Nodes: map[string]string{"worker-0": "Available", "worker-1": "Available"}}))
		Expect(a.Nodes).To(HaveLen(2))
		Expect(a.Nodes[0].Critical).To(Equal(map[string]string{
			"br-ex": "br-ex carries the node's default route", // and worker-0's InternalIP is on it
		}))
		Expect(a.Nodes[0].Persistent).To(ConsistOf(
			HaveField("Interface", "br-ex"), HaveField("Interface", "bond0")), "the storage VLAN moves; br-ex and its bond stay")

		// Once nmoverlay's handler runs with spec.migrateFrom, the node's own plan.
		nns := &v1beta1.NodeNetworkState{}
		Expect(c.Get(ctx, client.ObjectKey{Name: "worker-1"}, nns)).To(Succeed())
		nns.Status.Overlay = &v1beta1.OverlayStatus{Degraded: "not set up in this boot", Migration: &v1beta1.MigrationStatus{
			Move: []v1beta1.PersistentProfile{{File: "bond0.200.nmconnection", Interface: "bond0.200", Type: "vlan", Policies: []string{"storage"}}},
			Stay: []v1beta1.PersistentProfile{{File: "bond0.nmconnection", Interface: "bond0", Type: "bond",
				Detail: "br-ex carries the node's default route: the node needs it to boot, so it stays persistent (policies br-ex)"}}}}
		Expect(c.Status().Update(ctx, nns)).To(Succeed())
		text, code := migrate()
		Expect(code).To(Equal(0))
		Expect(text).To(ContainSubstring("stays persistent: bond0 of policy br-ex"))
		Expect(text).To(ContainSubstring("moves at its next boot on the overlay: bond0.200.nmconnection"))
		Expect(text).To(ContainSubstring("stays: bond0.nmconnection"))
		Expect(text).To(ContainSubstring("The move can start"))
	})

	It("refuses while a policy fails on a node or a node is not Ready, saying which", func() {
		enact("worker-1", "storage", storage, shared.EnactmentFailing, "error reconciling NodeNetworkConfigurationPolicy: rolled back")
		node := &corev1.Node{}
		Expect(c.Get(ctx, client.ObjectKey{Name: "worker-0"}, node)).To(Succeed())
		kit.SetReady(node, corev1.ConditionFalse)
		Expect(c.Status().Update(ctx, node)).To(Succeed())

		text, code := migrate()
		Expect(code).To(Equal(1))
		Expect(text).To(ContainSubstring("The move cannot start:"))
		Expect(text).To(ContainSubstring("policy storage is Failing: error reconciling NodeNetworkConfigurationPolicy: rolled back on node worker-1"))
		Expect(text).To(ContainSubstring("node worker-0 is not Ready"))
		// It changed nothing.
		p := &nmstatev1.NodeNetworkConfigurationPolicyList{}
		Expect(c.List(ctx, p)).To(Succeed())
		Expect(p.Items).To(HaveLen(2))
		d := &appsv1.Deployment{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "openshift-nmstate", Name: "nmstate-operator"}, d)).To(Succeed())
		Expect(*d.Spec.Replicas).To(Equal(int32(1)))
	})
})
