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

// deployObjects is what kubectl apply -k deploy/ sends: deploy.Objects, which the removal
// spec checks against kubectl kustomize.
func deployObjects() []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := deploy.Objects(deploy.Options{})
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// can asks the API server whether the service account may do verb on resource.
func can(sa, verb, group, resource, subresource string) bool {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:nmoverlay:" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:nmoverlay"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Subresource: subresource},
	}}
	Expect(k8s.Create(context.Background(), review)).To(Succeed())
	return review.Status.Allowed
}

var _ = Describe("the deploy manifests", Ordered, func() {
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
			case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
				DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed()) })
			}
		}
		const nmstate = "nmstate.io"
		Eventually(func() bool {
			return can("nmoverlay-handler", "update", nmstate, "nodenetworkconfigurationenactments", "status")
		}, "5s").Should(BeTrue())
		Expect(can("nmoverlay-handler", "create", nmstate, "nodenetworkstates", "")).To(BeTrue())
		Expect(can("nmoverlay-handler", "watch", nmstate, "nodenetworkconfigurationpolicies", "")).To(BeTrue())
		Expect(can("nmoverlay-handler", "list", "", "nodes", "")).To(BeTrue())
		Expect(can("nmoverlay-handler", "create", "events.k8s.io", "events", "")).To(BeTrue())
		Expect(can("nmoverlay-handler", "update", nmstate, "nodenetworkconfigurationpolicies", "status")).To(BeFalse(), "policy status has one writer")
		Expect(can("nmoverlay-handler", "update", nmstate, "nodenetworkconfigurationpolicies", "")).To(BeFalse())
		Expect(can("nmoverlay-handler", "update", "", "nodes", "")).To(BeFalse())
		Expect(can("nmoverlay-handler", "get", "", "secrets", "")).To(BeFalse())

		Expect(can("nmoverlay-controller", "update", nmstate, "nodenetworkconfigurationpolicies", "status")).To(BeTrue())
		Expect(can("nmoverlay-controller", "list", nmstate, "nodenetworkconfigurationenactments", "")).To(BeTrue())
		Expect(can("nmoverlay-controller", "create", nmstate, "nodenetworkconfigurationenactments", "")).To(BeFalse())
		Expect(can("nmoverlay-controller", "update", nmstate, "nodenetworkconfigurationenactments", "status")).To(BeFalse())
		Expect(can("nmoverlay-controller", "update", nmstate, "nodenetworkconfigurationpolicies", "")).To(BeFalse(), "it never changes a policy's spec")
	})
})
