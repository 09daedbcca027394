//go:build integration

package integration_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// examplePolicies are kubernetes-nmstate's example policies (testdata/policies), by file.
func examplePolicies() map[string]*unstructured.Unstructured {
	GinkgoHelper()
	files, err := filepath.Glob("testdata/policies/*.yaml")
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	policies := map[string]*unstructured.Unstructured{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(raw, &obj.Object)).To(Succeed())
		policies[f] = obj
	}
	return policies
}

var _ = Describe("the nmstate.io API", func() {
	ctx := context.Background()

	// createExamples creates the example policies for one spec and deletes them when it
	// ends: they select every node, other specs' nodes included.
	createExamples := func() map[string]*unstructured.Unstructured {
		GinkgoHelper()
		examples := examplePolicies()
		for f, obj := range examples {
			Expect(k8s.Create(ctx, obj)).To(Succeed(), f)
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj))).To(Succeed()) })
		}
		return examples
	}

	It("accepts kubernetes-nmstate policy manifests unchanged, v1 and v1beta1", func() {
		for f, obj := range createExamples() {
			raw, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())

			// Read back through the storage version: the desired state is kept as written
			// and the engine accepts it.
			policy := &nmstatev1.NodeNetworkConfigurationPolicy{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: obj.GetName()}, policy)).To(Succeed())
			var written map[string]any
			Expect(yaml.Unmarshal(raw, &written)).To(Succeed())
			wantState, _ := yaml.Marshal(written["spec"].(map[string]any)["desiredState"])
			gotState, _ := yaml.Marshal(policy.Spec.DesiredState)
			Expect(gotState).To(MatchYAML(wantState), f)
			_, err = state.Parse(policy.Spec.DesiredState.Raw)
			Expect(err).NotTo(HaveOccurred(), f)
		}
	})

	It("serves the v1beta1 policy as the same object", func() {
		createExamples()
		old := &v1beta1.NodeNetworkConfigurationPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "bond0-eth1-eth2-vlan"}, old)).To(Succeed())
		Expect(old.Spec.NodeSelector).To(HaveKeyWithValue("node-role.kubernetes.io/worker", ""))
		cur := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "vlan-eth1-v1beta1"}, cur)).To(Succeed())
		Expect(cur.Spec.MaxUnavailable.String()).To(Equal("25%"))
	})

	It("keeps status conditions through the status subresource", func() {
		createExamples()
		policy := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "br1-eth1-policy"}, policy)).To(Succeed())
		policy.Status.Conditions = []metav1.Condition{{Type: shared.PolicyAvailable, Status: metav1.ConditionTrue,
			Reason: shared.ReasonSuccessfullyConfigured, Message: "1/1 nodes successfully configured", LastTransitionTime: metav1.Now()}}
		Expect(k8s.Status().Update(ctx, policy)).To(Succeed())
		got := &nmstatev1.NodeNetworkConfigurationPolicy{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "br1-eth1-policy"}, got)).To(Succeed())
		Expect(got.Status.Conditions).To(HaveLen(1))
		Expect(got.Status.Conditions[0].Reason).To(Equal(shared.ReasonSuccessfullyConfigured))
	})

	It("stores enactments and node states with their status", func() {
		nnce := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{
			Name:   "worker-0.br1-eth1-policy",
			Labels: map[string]string{shared.NodeLabel: "worker-0", shared.PolicyLabel: "br1-eth1-policy"},
		}}
		Expect(k8s.Create(ctx, nnce)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, nnce)).To(Succeed()) })
		nnce.Status = v1beta1.NodeNetworkConfigurationEnactmentStatus{PolicyGeneration: 1, BootID: "b-1",
			DesiredState: shared.State{Raw: []byte(`{"interfaces":[{"name":"br1","type":"linux-bridge"}]}`)},
			Conditions: []metav1.Condition{{Type: shared.EnactmentAvailable, Status: metav1.ConditionTrue,
				Reason: shared.ReasonSuccessfullyConfigured, LastTransitionTime: metav1.Now()}}}
		// No status subresource: the status is written with the object (the controller
		// creates each enactment with its status in one write).
		Expect(k8s.Update(ctx, nnce)).To(Succeed())
		list := &v1beta1.NodeNetworkConfigurationEnactmentList{}
		Expect(k8s.List(ctx, list, client.MatchingLabels{shared.NodeLabel: "worker-0"})).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		Expect(list.Items[0].Status.BootID).To(Equal("b-1"))
		Expect(string(list.Items[0].Status.DesiredState.Raw)).To(MatchJSON(`{"interfaces":[{"name":"br1","type":"linux-bridge"}]}`))

		nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}}
		Expect(k8s.Create(ctx, nns)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, nns)).To(Succeed()) })
		nns.Status.HostNetworkManagerVersion = "1.42.4"
		nns.Status.Overlay = &v1beta1.OverlayStatus{Ephemeral: []v1beta1.EphemeralProfile{{File: "br-ex.nmconnection", Change: "added", Owned: false}}}
		Expect(k8s.Status().Update(ctx, nns)).To(Succeed())
	})

	It("serves the short names and printer columns administrators use", func() {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		short := map[string][]string{}
		for _, gv := range []string{"nmstate.io/v1", "nmstate.io/v1beta1"} {
			list, err := dc.ServerResourcesForGroupVersion(gv)
			Expect(err).NotTo(HaveOccurred())
			for _, r := range list.APIResources {
				if !strings.Contains(r.Name, "/") { // not a subresource
					short[r.Kind] = r.ShortNames
				}
			}
		}
		Expect(short).To(HaveKeyWithValue("NodeNetworkConfigurationPolicy", ContainElement("nncp")))
		Expect(short).To(HaveKeyWithValue("NodeNetworkConfigurationEnactment", ContainElement("nnce")))
		Expect(short).To(HaveKeyWithValue("NodeNetworkState", ContainElement("nns")))

		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "nodenetworkconfigurationpolicies.nmstate.io"}, crd)).To(Succeed())
		var columns []string
		for _, v := range crd.Spec.Versions {
			if v.Name == "v1" {
				for _, c := range v.AdditionalPrinterColumns {
					columns = append(columns, c.Name)
				}
				Expect(v.Storage).To(BeTrue())
			}
		}
		Expect(columns).To(Equal([]string{"Status", "Reason", "Age"}))
	})
})
