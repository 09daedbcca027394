//go:build integration

package integration_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/deploy"
)

// deployObjects is every object of an installed nmoverlay: what kubectl apply -k deploy/
// sends (deploy.Objects) and what the operator then deploys (deploy.Operand), which the
// removal spec checks against kubectl kustomize.
func deployObjects() []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := deploy.Objects(deploy.Options{})
	Expect(err).NotTo(HaveOccurred())
	operand, err := deploy.Operand(deploy.Options{})
	Expect(err).NotTo(HaveOccurred())
	return append(objs, operand...)
}

// can asks the API server whether the service account may do verb on resource.
// access is can as an assertion reads it: "allowed" or "denied", so a failure names which.
func access(sa, verb, group, resource, subresource string) string {
	if can(sa, verb, group, resource, subresource) {
		return "allowed"
	}
	return "denied"
}

func can(sa, verb, group, resource, subresource string) bool {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:nmoverlay:" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:nmoverlay"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Subresource: subresource},
	}}
	Expect(k8s.Create(context.Background(), review)).To(Succeed())
	return review.Status.Allowed
}

var _ = Describe("the deploy manifests", func() {
	ctx := context.Background()

	It("are accepted by the API server, every object (server-side dry run)", func() {
		objs := deployObjects()
		Expect(len(objs)).To(BeNumerically(">=", 12))
		// The namespace first: the dry run of a namespaced object needs it to exist.
		for _, o := range objs {
			if o.GetKind() == "Namespace" {
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
			}
		}
		for _, o := range objs {
			err := k8s.Patch(ctx, o.DeepCopy(), client.Apply, client.DryRunAll, client.FieldOwner("deploy-test"), client.ForceOwnership)
			Expect(err).NotTo(HaveOccurred(), "%s %s", o.GetKind(), o.GetName())
		}
	})

	It("give the handler and the controller exactly what they need", func() {
		for _, o := range deployObjects() {
			switch o.GetKind() {
			case "Namespace":
				// Kept: envtest runs no namespace controller, so a deleted namespace would stay
				// Terminating for the specs after this one.
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
			case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
				DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed()) })
			}
		}
		const nmstate = "nmstate.io"
		Eventually(func() bool {
			return can("nmoverlay-handler", "patch", nmstate, "nodenetworkconfigurationenactments", "")
		}, "5s").Should(BeTrue(), "it patches its enactments' status (no status subresource; admission keeps it to the status)")
		Expect(access("nmoverlay-handler", "update", nmstate, "nodenetworkconfigurationenactments", "")).To(Equal("denied"), "it patches them")
		Expect(access("nmoverlay-handler", "update", nmstate, "nodenetworkstates", "status")).To(Equal("allowed"))
		Expect(access("nmoverlay-handler", "create", nmstate, "nodenetworkstates", "")).To(Equal("allowed"))
		Expect(access("nmoverlay-handler", "watch", nmstate, "nodenetworkconfigurationpolicies", "")).To(Equal("allowed"))
		Expect(access("nmoverlay-handler", "list", "", "nodes", "")).To(Equal("allowed"))
		Expect(access("nmoverlay-handler", "create", "events.k8s.io", "events", "")).To(Equal("allowed"))
		Expect(access("nmoverlay-handler", "update", nmstate, "nodenetworkconfigurationpolicies", "status")).To(Equal("denied"), "policy status has one writer")
		Expect(access("nmoverlay-handler", "update", nmstate, "nodenetworkconfigurationpolicies", "")).To(Equal("denied"))
		Expect(access("nmoverlay-handler", "update", "", "nodes", "")).To(Equal("denied"))
		Expect(access("nmoverlay-handler", "patch", "", "nodes", "")).To(Equal("allowed"), "it lifts its node's reboot gate (admission keeps it to that)")
		Expect(access("nmoverlay-handler", "patch", "", "nodes", "status")).To(Equal("denied"))
		Expect(access("nmoverlay-handler", "get", "", "secrets", "")).To(Equal("denied"))

		Expect(access("nmoverlay-controller", "update", nmstate, "nodenetworkconfigurationpolicies", "status")).To(Equal("allowed"))
		Expect(access("nmoverlay-controller", "list", nmstate, "nodenetworkconfigurationenactments", "")).To(Equal("allowed"))
		Expect(access("nmoverlay-controller", "create", nmstate, "nodenetworkconfigurationenactments", "")).To(Equal("allowed"), "it grants rollout slots")
		Expect(access("nmoverlay-controller", "patch", nmstate, "nodenetworkconfigurationenactments", "")).To(Equal("allowed"), "it grants rollout slots")
		Expect(access("nmoverlay-handler", "create", nmstate, "nodenetworkconfigurationenactments", "")).To(Equal("denied"), "the controller creates them with a slot")
		Expect(access("nmoverlay-controller", "update", nmstate, "nodenetworkconfigurationenactments", "status")).To(Equal("denied"))
		Expect(access("nmoverlay-controller", "update", nmstate, "nodenetworkconfigurationpolicies", "")).To(Equal("denied"), "it never changes a policy's spec")
		Expect(access("nmoverlay-controller", "patch", "", "nodes", "")).To(Equal("allowed"), "it starts and lifts reboot gates (admission keeps it to that)")
		Expect(access("nmoverlay-controller", "update", "", "nodes", "")).To(Equal("denied"))
		Expect(access("nmoverlay-controller", "delete", "", "nodes", "")).To(Equal("denied"))
	})
})
