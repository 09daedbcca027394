//go:build integration

package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/test/kit"
)

// Node names of their own: the handler specs leave node-a and its NodeNetworkState behind.
const (
	admNodeA    = "adm-node-a"
	admNodeB    = "adm-node-b"
	handlerSA   = "nmoverlay-handler"
	nodeNameKey = "authentication.kubernetes.io/node-name"
)

// expectDenied checks err is an admission policy's denial (not RBAC's) for reason, and
// that its message names every one of mentions.
func expectDenied(err error, reason metav1.StatusReason, mentions ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the request was admitted")
	GinkgoWriter.Println("denied:", err)
	Expect(apierrors.ReasonForError(err)).To(Equal(reason), "%v", err)
	Expect(err.Error()).To(ContainSubstring("ValidatingAdmissionPolicy"), "denied, but not by an admission policy")
	for _, m := range mentions {
		Expect(err.Error()).To(ContainSubstring(m))
	}
}

// labelledEnactment is an enactment with the labels the handler sets; an empty node or
// policy leaves that label out.
func labelledEnactment(name, node, policy string) *v1beta1.NodeNetworkConfigurationEnactment {
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if node != "" {
		e.Labels[shared.NodeLabel] = node
	}
	if policy != "" {
		e.Labels[shared.PolicyLabel] = policy
	}
	return e
}

// handlerEvent is the event the handler on node records about policy, as client-go's
// tools/events recorder makes it: in default (the policy is cluster-scoped), reported as
// nmoverlay-handler-<host name, here the node's>, related to the node, the note in
// Handler.event's form.
func handlerEvent(node string, policy *nmstatev1.NodeNetworkConfigurationPolicy) *eventsv1.Event {
	return &eventsv1.Event{
		// Named as the recorder names it (generateName would need to be a DNS subdomain).
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", policy.Name, time.Now().UnixNano()), Namespace: metav1.NamespaceDefault},
		EventTime:           metav1.NowMicro(),
		ReportingController: "nmoverlay-handler",
		ReportingInstance:   "nmoverlay-handler-" + node,
		Action:              "Apply",
		Reason:              shared.ReasonFailedToConfigure,
		Type:                corev1.EventTypeWarning,
		Note:                "node " + node + ": spec.desiredState: interfaces[0].vlan.id: 5000 is out of range 1..4094",
		Regarding:           corev1.ObjectReference{Kind: "NodeNetworkConfigurationPolicy", APIVersion: "nmstate.io/v1", Name: policy.Name, UID: policy.UID},
		Related:             &corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: node},
	}
}

// clientWithToken is a client that authenticates with token alone (no client certificate).
func clientWithToken(token string) client.Client {
	rc := rest.AnonymousClientConfig(cfg)
	rc.BearerToken = token
	scheme, err := api.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(rc, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("the admission policies", Ordered, func() {
	ctx := context.Background()
	var (
		handlerA client.Client // the handler's token, bound to its Pod on adm-node-a
		unbound  client.Client // the handler's token, bound to nothing
		// token returns a token of the service account nmoverlay-handler in namespace ns,
		// bound to the Pod (nil: to nothing).
		token func(ns string, pod *corev1.Pod) string
	)

	// create makes obj as the administrator and deletes it after the container's specs.
	create := func(obj client.Object) {
		GinkgoHelper()
		Expect(k8s.Create(ctx, obj)).To(Succeed(), "%T %s", obj, obj.GetName())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, obj, client.GracePeriodSeconds(0)))).To(Succeed())
		})
	}

	BeforeAll(func() {
		// A policy stored before the checks existed (it could never be created now).
		legacy := policy("adm-legacy", map[string]string{"bad key": "x"}, `{"interfaces":[{"name":"eth1","type":"ethernet"}]}`)
		legacy.Spec.MaxUnavailable = ptrTo(intstr.FromString("0%"))
		// Another spec may just have deleted the checks (kubectl delete -k): the API server
		// stops enforcing a deleted admission policy once its informer has seen the delete.
		Eventually(func() error { return k8s.Create(ctx, legacy) }, "10s", "100ms").Should(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, legacy, client.GracePeriodSeconds(0)))).To(Succeed())
		})

		var policies []*unstructured.Unstructured
		for _, o := range deployObjects() {
			switch o.GetKind() {
			case "Namespace":
				// Never deleted: without a namespace controller it would stay Terminating.
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
			case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
				Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, o.DeepCopy()))).To(Succeed())
				DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, o))).To(Succeed()) })
			case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
				policies = append(policies, o)
			}
		}
		// The handler no longer creates enactments (the controller does, with their rollout
		// slot), so its role cannot; grant it here, in both namespaces the specs install it
		// in, to show the admission policy holds the node to its own should it ever again.
		createRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "adm-test-enactment-create"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkconfigurationenactments"}, Verbs: []string{"create"}}}}
		create(createRole)
		create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "adm-test-enactment-create"},
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: createRole.Name},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: handlerSA, Namespace: "nmoverlay"},
				{Kind: "ServiceAccount", Name: handlerSA, Namespace: "adm-elsewhere"}}})
		Expect(policies).To(HaveLen(8), "four policies, each with its binding")

		for _, name := range []string{admNodeA, admNodeB} {
			create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
		// The handler's Pod as the DaemonSet would place it. No kubelet runs it: the API
		// server only needs it to exist, bound to the node, to bind a token to it.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "handler-adm-node-a", Namespace: "nmoverlay"},
			Spec: corev1.PodSpec{ServiceAccountName: handlerSA, NodeName: admNodeA,
				Containers: []corev1.Container{{Name: "handler", Image: "nmoverlay"}}},
		}
		create(pod)

		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		token = func(ns string, pod *corev1.Pod) string {
			GinkgoHelper()
			var bound *authenticationv1.BoundObjectReference
			if pod != nil {
				bound = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
			}
			tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, handlerSA, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600)), BoundObjectRef: bound},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return tr.Status.Token
		}
		handlerA = clientWithToken(token("nmoverlay", pod))
		unbound = clientWithToken(token("nmoverlay", nil))

		installed := time.Now()
		for _, o := range policies {
			create(o.DeepCopy())
		}
		// Policies are enforced once the API server has loaded and compiled them: wait for
		// a known-bad request of each kind to be denied (dry runs: nothing is stored if an
		// early one is admitted).
		Eventually(func() error {
			return handlerA.Create(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: admNodeB}}, client.DryRunAll)
		}, "30s", "50ms").Should(MatchError(ContainSubstring("nmoverlay-handler-node-authority")))
		Eventually(func() error {
			p := policy("adm-probe", nil, `{}`)
			p.Spec.MaxUnavailable = ptrTo(intstr.FromInt32(0))
			return k8s.Create(ctx, p, client.DryRunAll)
		}, "30s", "50ms").Should(MatchError(ContainSubstring("nmoverlay-policy-checks")))
		Eventually(func() error {
			e := handlerEvent(admNodeA, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "adm-probe"}})
			e.Namespace = metav1.NamespaceSystem
			return handlerA.Create(ctx, e, client.DryRunAll)
		}, "30s", "50ms").Should(MatchError(ContainSubstring("nmoverlay-handler-events")))
		took := time.Since(installed)
		AddReportEntry("admission policies enforced after", took.String(), ReportEntryVisibilityFailureOrVerbose)
	})

	Context("the handler's per-node authority", func() {
		It("comes from the token: a token bound to a Pod on a node names that node", func() {
			review := &authenticationv1.SelfSubjectReview{}
			Expect(handlerA.Create(ctx, review)).To(Succeed())
			Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:nmoverlay:" + handlerSA))
			Expect(review.Status.UserInfo.Extra).To(HaveKeyWithValue(nodeNameKey, authenticationv1.ExtraValue{admNodeA}))

			review = &authenticationv1.SelfSubjectReview{}
			Expect(unbound.Create(ctx, review)).To(Succeed())
			Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:nmoverlay:" + handlerSA))
			Expect(review.Status.UserInfo.Extra).NotTo(HaveKey(nodeNameKey))
		})

		It("lets the handler create, update the status of and delete its own node's NodeNetworkState", func() {
			nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: admNodeA}}
			Expect(handlerA.Create(ctx, nns)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, nns))).To(Succeed()) })
			nns.Status.HostNetworkManagerVersion = "1.52.0"
			Expect(handlerA.Status().Update(ctx, nns)).To(Succeed())
			got := &v1beta1.NodeNetworkState{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(nns), got)).To(Succeed())
			Expect(got.Status.HostNetworkManagerVersion).To(Equal("1.52.0"))
			Expect(handlerA.Delete(ctx, nns)).To(Succeed())
		})

		It("lets the handler create, update the status of and delete its own node's enactments", func() {
			e := labelledEnactment(admNodeA+".some-policy", admNodeA, "some-policy")
			Expect(handlerA.Create(ctx, e)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, e))).To(Succeed()) })
			before := e.DeepCopy()
			e.Status.BootID = "boot-1"
			Expect(handlerA.Patch(ctx, e, client.MergeFrom(before))).To(Succeed(), "the handler patches its enactments' status (no status subresource)")
			got := &v1beta1.NodeNetworkConfigurationEnactment{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(e), got)).To(Succeed())
			Expect(got.Status.BootID).To(Equal("boot-1"))
			Expect(handlerA.Delete(ctx, e)).To(Succeed())
		})

		It("denies the handler another node's NodeNetworkState, naming both nodes", func() {
			err := handlerA.Create(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: admNodeB}})
			expectDenied(err, metav1.StatusReasonForbidden, "nmoverlay-handler on "+admNodeA, "not "+admNodeB)

			nns := &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: admNodeB}}
			create(nns)
			nns.Status.HostNetworkManagerVersion = "0.0.0"
			expectDenied(handlerA.Status().Update(ctx, nns.DeepCopy()), metav1.StatusReasonForbidden, admNodeA, admNodeB, "(status)")
			expectDenied(handlerA.Delete(ctx, nns.DeepCopy()), metav1.StatusReasonForbidden, admNodeA, admNodeB)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(nns), &v1beta1.NodeNetworkState{})).To(Succeed(), "still there")
		})

		It("denies the handler another node's enactments, naming both nodes", func() {
			expectDenied(handlerA.Create(ctx, labelledEnactment(admNodeB+".some-policy", admNodeB, "some-policy")), metav1.StatusReasonForbidden, admNodeA, "not "+admNodeB)
			// The label decides, not the name.
			expectDenied(handlerA.Create(ctx, labelledEnactment(admNodeA+".mislabelled", admNodeB, "mislabelled")), metav1.StatusReasonForbidden, admNodeA, "not "+admNodeB)
			expectDenied(handlerA.Create(ctx, labelledEnactment(admNodeA+".unlabelled", "", "unlabelled")), metav1.StatusReasonForbidden, admNodeA, "without the nmstate.io/node label")
			// Its own label under a name that claims the other node.
			expectDenied(handlerA.Create(ctx, labelledEnactment(admNodeB+".misnamed", admNodeA, "misnamed")), metav1.StatusReasonForbidden,
				"metadata.name: nmoverlay-handler on "+admNodeA+" names its enactment for policy misnamed: "+admNodeA+".misnamed", "not "+admNodeB+".misnamed")

			theirs := labelledEnactment(admNodeB+".some-policy", admNodeB, "some-policy")
			create(theirs)
			before := theirs.DeepCopy()
			theirs.Status.BootID = "boot-taken-over"
			expectDenied(handlerA.Patch(ctx, theirs.DeepCopy(), client.MergeFrom(before)), metav1.StatusReasonForbidden, admNodeA, "not "+admNodeB)
			expectDenied(handlerA.Delete(ctx, theirs.DeepCopy()), metav1.StatusReasonForbidden, admNodeA, "not "+admNodeB)
			got := &v1beta1.NodeNetworkConfigurationEnactment{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), got)).To(Succeed(), "still there")
			Expect(got.Status.BootID).To(BeEmpty())
		})

		It("denies relabelling its own enactment to another node, even where RBAC would allow the update", func() {
			// The handler's role has no update on enactments (only patch, for their status), so
			// RBAC alone stops this today; grant it here to show the admission policy holds too.
			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "adm-test-enactment-update"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkconfigurationenactments"}, Verbs: []string{"update"}}}}
			create(role)
			create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "adm-test-enactment-update"},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: handlerSA, Namespace: "nmoverlay"}}})

			mine := labelledEnactment(admNodeA+".relabel", admNodeA, "relabel")
			Expect(handlerA.Create(ctx, mine)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, mine))).To(Succeed()) })
			// An update of its status alone is admitted (once RBAC has the new binding).
			Eventually(func() error {
				e := &v1beta1.NodeNetworkConfigurationEnactment{}
				if err := handlerA.Get(ctx, client.ObjectKeyFromObject(mine), e); err != nil {
					return err
				}
				e.Status.BootID = "boot-1"
				return handlerA.Update(ctx, e)
			}, "10s", "100ms").Should(Succeed())

			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			Expect(handlerA.Get(ctx, client.ObjectKeyFromObject(mine), e)).To(Succeed())
			e.Labels[shared.NodeLabel] = admNodeB
			expectDenied(handlerA.Update(ctx, e), metav1.StatusReasonForbidden, "nmoverlay-handler on "+admNodeA, "not "+admNodeB)

			// Nor to another policy (or none): rollout slots are counted by it.
			Expect(handlerA.Get(ctx, client.ObjectKeyFromObject(mine), e)).To(Succeed())
			e.Labels[shared.PolicyLabel] = "other-policy"
			expectDenied(handlerA.Update(ctx, e.DeepCopy()), metav1.StatusReasonForbidden,
				"metadata.labels[nmstate.io/policy]: nmoverlay-handler on "+admNodeA, `enactment `+mine.Name+`: "other-policy", was "relabel"`)
			delete(e.Labels, shared.PolicyLabel)
			expectDenied(handlerA.Update(ctx, e.DeepCopy()), metav1.StatusReasonForbidden,
				"metadata.labels[nmstate.io/policy]", `: "", was "relabel"`)

			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mine), e)).To(Succeed())
			Expect(e.Labels).To(Equal(map[string]string{shared.NodeLabel: admNodeA, shared.PolicyLabel: "relabel"}))

			// Nor grant itself a rollout slot, on its own enactment or a new one.
			metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, shared.FormatRolloutSlot(1, time.Now()))
			expectDenied(handlerA.Update(ctx, e.DeepCopy()), metav1.StatusReasonForbidden,
				"metadata.annotations[nmoverlay.io/rollout-slot]: nmoverlay-handler on "+admNodeA+" may not grant a rollout slot")
			granted := labelledEnactment(admNodeA+".self-granted", admNodeA, "self-granted")
			metav1.SetMetaDataAnnotation(&granted.ObjectMeta, shared.RolloutSlotAnnotation, shared.FormatRolloutSlot(1, time.Now()))
			expectDenied(handlerA.Create(ctx, granted, client.DryRunAll), metav1.StatusReasonForbidden,
				"metadata.annotations[nmoverlay.io/rollout-slot]", "the cluster controller grants them")
			// The controller's grant stays the handler's to keep: its own status updates that
			// leave it as it is are admitted.
			metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutSlotAnnotation, shared.FormatRolloutSlot(1, time.Now()))
			Expect(k8s.Update(ctx, e.DeepCopy())).To(Succeed(), "the administrator (as the controller) grants it")
			Expect(handlerA.Get(ctx, client.ObjectKeyFromObject(mine), e)).To(Succeed())
			e.Status.BootID = "boot-2"
			Expect(handlerA.Update(ctx, e.DeepCopy())).To(Succeed())

			// Nothing else of its metadata: not the controller's requeue mark, nor an
			// annotation of its own, nor what ties it to its Node or keeps it.
			nodeB := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: admNodeB, UID: "00000000-0000-0000-0000-00000000000b"}
			for _, tc := range []struct {
				what   string
				change func(*v1beta1.NodeNetworkConfigurationEnactment)
			}{
				{"the controller's requeue mark", func(e *v1beta1.NodeNetworkConfigurationEnactment) {
					metav1.SetMetaDataAnnotation(&e.ObjectMeta, shared.RolloutRequeuedAnnotation, "1")
				}},
				{"an annotation", func(e *v1beta1.NodeNetworkConfigurationEnactment) { e.Annotations["example.com/touched"] = "yes" }},
				{"a label", func(e *v1beta1.NodeNetworkConfigurationEnactment) { e.Labels["example.com/touched"] = "yes" }},
				{"a finalizer", func(e *v1beta1.NodeNetworkConfigurationEnactment) {
					e.Finalizers = append(e.Finalizers, "example.com/keep")
				}},
				{"an owner", func(e *v1beta1.NodeNetworkConfigurationEnactment) {
					e.OwnerReferences = append(e.OwnerReferences, nodeB)
				}},
			} {
				By("not " + tc.what)
				Expect(handlerA.Get(ctx, client.ObjectKeyFromObject(mine), e)).To(Succeed())
				tc.change(e)
				expectDenied(handlerA.Update(ctx, e.DeepCopy()), metav1.StatusReasonForbidden,
					"metadata: nmoverlay-handler on "+admNodeA+" may change only the status of NodeNetworkConfigurationEnactment "+mine.Name)
			}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mine), e)).To(Succeed())
			Expect(e.Status.BootID).To(Equal("boot-2"))
			Expect(e.Finalizers).To(BeEmpty())
		})

		It("lets the handler name an enactment only <node>.<policy>, or that and a random suffix", func() {
			// Names with dots can meet: node adm-node-a.a's enactment for policy x and
			// adm-node-a's for policy a.x are both adm-node-a.a.x. The one that comes second
			// takes a random suffix.
			create(labelledEnactment(admNodeA+".a.x", admNodeA+".a", "x")) // adm-node-a.a's, by the administrator
			err := handlerA.Create(ctx, labelledEnactment(admNodeA+".a.x", admNodeA, "a.x"))
			Expect(apierrors.IsAlreadyExists(err)).To(BeTrue(), "admitted, then taken: %v", err)
			fallback := labelledEnactment(admNodeA+".a.x-k3v9q0zt", admNodeA, "a.x")
			Expect(handlerA.Create(ctx, fallback)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, fallback))).To(Succeed()) })

			for _, name := range []string{admNodeA + ".some-policy", admNodeA + ".some-policy-0a1b2c3d"} {
				Expect(handlerA.Create(ctx, labelledEnactment(name, admNodeA, "some-policy"), client.DryRunAll)).To(Succeed(), name)
			}
			for _, name := range []string{
				admNodeA + ".other-policy",          // another policy's name: would take its name in advance
				admNodeA + ".some",                  // a prefix of the policy
				admNodeA + ".some-policyabcd1234",   // a suffix without its dash
				admNodeA + ".some-policy-abc1234",   // 7 characters
				admNodeA + ".some-policy-abcd12345", // 9
				admNodeA + ".some-policy-abcd.123",  // not [a-z0-9]
				admNodeA + ".some-policy-abc-1234",
				admNodeA + ".some-policy.x",
				admNodeA + "x.some-policy", // another node's prefix
			} {
				expectDenied(handlerA.Create(ctx, labelledEnactment(name, admNodeA, "some-policy"), client.DryRunAll), metav1.StatusReasonForbidden,
					"metadata.name: nmoverlay-handler on "+admNodeA+" names its enactment for policy some-policy: "+admNodeA+".some-policy, or "+
						admNodeA+".some-policy-<8 characters of [a-z0-9]> if that name is taken; not "+name)
			}

			// The policy label is what the name is checked against: it must be there.
			expectDenied(handlerA.Create(ctx, labelledEnactment(admNodeA+".some-policy", admNodeA, ""), client.DryRunAll), metav1.StatusReasonForbidden,
				"metadata.labels[nmstate.io/policy]: nmoverlay-handler on "+admNodeA, admNodeA+".some-policy has no such label or an empty one")
			empty := labelledEnactment(admNodeA+".some-policy", admNodeA, "")
			empty.Labels[shared.PolicyLabel] = ""
			expectDenied(handlerA.Create(ctx, empty, client.DryRunAll), metav1.StatusReasonForbidden, "metadata.labels[nmstate.io/policy]", "or an empty one")
		})

		It("holds a handler installed in another namespace to its node too", func() {
			const ns = "adm-elsewhere"
			// Never deleted: without a namespace controller it would stay Terminating.
			Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
			create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: handlerSA, Namespace: ns}})
			// Its role bound to it, as deploy/ binds it in nmoverlay.
			create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "adm-elsewhere-handler"},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "nmoverlay-handler"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: handlerSA, Namespace: ns}}})
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "handler-adm-node-a", Namespace: ns},
				Spec: corev1.PodSpec{ServiceAccountName: handlerSA, NodeName: admNodeA,
					Containers: []corev1.Container{{Name: "handler", Image: "nmoverlay"}}},
			}
			create(pod)
			elsewhere := clientWithToken(token(ns, pod))

			review := &authenticationv1.SelfSubjectReview{}
			Expect(elsewhere.Create(ctx, review)).To(Succeed())
			Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + ns + ":" + handlerSA))
			Expect(review.Status.UserInfo.Extra).To(HaveKeyWithValue(nodeNameKey, authenticationv1.ExtraValue{admNodeA}))

			// Its own node's writes pass (once RBAC has the binding)...
			mine := labelledEnactment(admNodeA+".elsewhere", admNodeA, "elsewhere")
			Eventually(func() error { return elsewhere.Create(ctx, mine.DeepCopy(), client.DryRunAll) }, "10s", "100ms").Should(Succeed())
			// ...and the rest is denied as for the handler in nmoverlay.
			expectDenied(elsewhere.Create(ctx, labelledEnactment(admNodeB+".elsewhere", admNodeB, "elsewhere")), metav1.StatusReasonForbidden,
				"nmoverlay-handler on "+admNodeA, "not "+admNodeB)
			expectDenied(elsewhere.Create(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: admNodeB}}), metav1.StatusReasonForbidden,
				"nmoverlay-handler on "+admNodeA, "not "+admNodeB)
			expectDenied(elsewhere.Create(ctx, labelledEnactment(admNodeA+".other", admNodeA, "elsewhere")), metav1.StatusReasonForbidden, "metadata.name")
			expectDenied(clientWithToken(token(ns, nil)).Create(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: admNodeA}}),
				metav1.StatusReasonForbidden, "this token names no node")
			secret := handlerEvent(admNodeA, &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "adm-events"}})
			secret.Regarding = corev1.ObjectReference{Kind: "Secret", APIVersion: "v1", Namespace: ns, Name: "credentials"}
			expectDenied(elsewhere.Create(ctx, secret), metav1.StatusReasonForbidden, "regarding:", "not Secret v1 "+ns+"/credentials")
		})

		It("denies every write to a token that names no node, saying so", func() {
			err := unbound.Create(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: admNodeA}})
			expectDenied(err, metav1.StatusReasonForbidden, "this token names no node", "NodeNetworkState "+admNodeA)
			err = unbound.Create(ctx, labelledEnactment(admNodeA+".some-policy", admNodeA, "some-policy"))
			expectDenied(err, metav1.StatusReasonForbidden, "this token names no node")
		})

		It("leaves other users alone", func() {
			// The administrator (and so the controller's and other tools' writes) is not
			// the handler: the matchCondition keeps the policy off them.
			e := labelledEnactment(admNodeA+".by-admin", admNodeB, "")
			Expect(k8s.Create(ctx, e, client.DryRunAll)).To(Succeed())
		})
	})

	Context("a compromised handler and the rollout", func() {
		// What a node's own token can do to a rollout (docs/reconciler.md, Security): delete its own
		// enactments, which the controller recreates, the node behind every node that has
		// not had a grant; it cannot grant itself a slot (above), nor hold one beyond the
		// slot timeout (TestPlanSlots), nor touch another node's enactment (above).
		It("cannot hold a rollout back by deleting its own granted enactment", func() {
			// adm-node-a (the compromised handler's) and adm-node-f, both Ready; a policy
			// with one slot selects both, and adm-node-a comes first by name.
			fair := map[string]string{"adm-fair": "yes"}
			n := &corev1.Node{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: admNodeA}, n)).To(Succeed())
			n.Labels = fair
			Expect(k8s.Update(ctx, n)).To(Succeed())
			kit.SetReady(n, corev1.ConditionTrue)
			Expect(k8s.Status().Update(ctx, n)).To(Succeed())
			_, err := kit.ReadyNode(ctx, k8s, "adm-node-f", fair)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() {
				Expect(k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "adm-node-f"}})).To(Succeed())
			})
			stop, err := kit.StartController(cfg, k8s.Scheme())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(stop)

			p := policy("adm-fair", fair, `{"interfaces":[{"name":"eth7","type":"ethernet","mtu":1400}]}`)
			p.Spec.MaxUnavailable = ptrTo(intstr.FromInt32(1))
			create(p)
			grantOf := func(node string) func() string {
				return func() string {
					e := enactment(node, p.Name)()
					if e == nil {
						return "<no enactment>"
					}
					return e.Annotations[shared.RolloutSlotAnnotation]
				}
			}
			Eventually(grantOf(admNodeA), "10s").Should(HavePrefix("1/"), "the first node by name is granted")
			Expect(grantOf("adm-node-f")()).To(BeEmpty())

			// The compromised handler deletes its own enactment every 5 s, with its own
			// token (RBAC and the admission policy allow it: a handler deletes those of
			// policies gone).
			hostile, cancel := context.WithCancel(ctx)
			var deletions atomic.Int32
			done := make(chan struct{})
			go func() {
				defer GinkgoRecover()
				defer close(done)
				for {
					list := &v1beta1.NodeNetworkConfigurationEnactmentList{}
					if err := handlerA.List(hostile, list, client.MatchingLabels{shared.NodeLabel: admNodeA, shared.PolicyLabel: p.Name}); err == nil {
						for i := range list.Items {
							if handlerA.Delete(hostile, &list.Items[i]) == nil {
								deletions.Add(1)
							}
						}
					}
					select {
					case <-hostile.Done():
						return
					case <-time.After(5 * time.Second):
					}
				}
			}()
			DeferCleanup(func() { cancel(); <-done })

			// Within the first deletion's round, far inside the slot timeout (5 min), the
			// other node is granted; the compromised node's recreated enactment waits, marked
			// as behind the others.
			Eventually(grantOf("adm-node-f"), "15s").Should(HavePrefix("1/"))
			Eventually(enactment(admNodeA, p.Name), "10s").Should(SatisfyAll(
				HaveEnactmentCondition(shared.EnactmentPending, shared.ReasonMaxUnavailableLimitReached, shared.MessagePending),
				HaveField("Annotations", HaveKeyWithValue(shared.RolloutRequeuedAnnotation, "1"))))
			Consistently(grantOf(admNodeA), "11s").ShouldNot(HavePrefix("1/"), "not granted again while another node has not had its turn")
			Expect(deletions.Load()).To(BeNumerically(">=", 2))

			// Once adm-node-f reports, every node has had a grant: the compromised node may go.
			cancel()
			<-done
			Eventually(func() error {
				e := enactment("adm-node-f", p.Name)()
				e.Status.PolicyGeneration = 1
				shared.SetEnactment(&e.Status.Conditions, shared.EnactmentAvailable, "applied")
				return k8s.Update(ctx, e)
			}, "10s").Should(Succeed())
			Eventually(grantOf(admNodeA), "10s").Should(HavePrefix("1/"))
		})
	})

	Context("the handler's events", func() {
		pol := policy("adm-events", nil, `{}`)
		BeforeAll(func() { create(pol) })

		It("admit what the handler's recorder records, and its series", func() {
			// The recorder reports as nmoverlay-handler-<host name>; the handler's Pod has its
			// node's host name (host network), and the kubelet names the node after it. Here
			// the host is this machine: a node of that name, the handler's Pod on it.
			host, err := os.Hostname()
			Expect(err).NotTo(HaveOccurred())
			nodeName := strings.ToLower(host)
			create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "handler-recorder", Namespace: "nmoverlay"},
				Spec: corev1.PodSpec{ServiceAccountName: handlerSA, NodeName: nodeName,
					Containers: []corev1.Container{{Name: "handler", Image: "nmoverlay"}}},
			}
			create(pod)
			rc := rest.AnonymousClientConfig(cfg)
			rc.BearerToken = token("nmoverlay", pod)

			// The recorder cmd/handler uses, from a manager with the bound token.
			skip := true
			mgr, err := ctrl.NewManager(rc, ctrl.Options{Scheme: k8s.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
				HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: &skip}})
			Expect(err).NotTo(HaveOccurred())
			mgrCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- mgr.Start(mgrCtx) }()
			DeferCleanup(func() { stop(); Expect(<-done).To(Succeed()) })
			rec := mgr.GetEventRecorder("nmoverlay-handler")

			node := &corev1.Node{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: nodeName}, node)).To(Succeed())
			record := func() {
				// As Handler.event records a failure.
				rec.Eventf(pol, node, corev1.EventTypeWarning, shared.ReasonFailedToConfigure, "Apply", "node %s: %v", nodeName,
					errors.New("probe default-gateway failed: no echo reply from 192.0.2.1; rolled back"))
			}
			recorded := func() *eventsv1.Event {
				list := &eventsv1.EventList{}
				Expect(k8s.List(ctx, list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
				for i, e := range list.Items {
					if e.Regarding.Name == pol.Name && e.ReportingInstance == "nmoverlay-handler-"+host {
						return &list.Items[i]
					}
				}
				return nil
			}
			record()
			Eventually(recorded, "10s", "100ms").ShouldNot(BeNil())
			e := recorded()
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, e))).To(Succeed()) })
			Expect(e.ReportingController).To(Equal("nmoverlay-handler"))
			Expect(e.Type).To(Equal(corev1.EventTypeWarning))
			Expect(e.Regarding).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal("NodeNetworkConfigurationPolicy"), "APIVersion": Equal("nmstate.io/v1")}))
			Expect(e.Related).To(PointTo(MatchFields(IgnoreExtras, Fields{"Kind": Equal("Node"), "Name": Equal(nodeName)})))
			Expect(e.Note).To(HavePrefix("node " + nodeName + ": probe default-gateway failed"))
			Expect(e.Series).To(BeNil())

			// The same event again: the recorder patches it into a series.
			record()
			Eventually(func() *eventsv1.EventSeries { return recorded().Series }, "10s", "100ms").Should(PointTo(HaveField("Count", int32(2))))
		})

		// Each entry changes one field of the event the handler on adm-node-a records
		// (handlerEvent, admitted: the first entry) and the denial names that field.
		DescribeTable("deny anything else, naming the field",
			func(change func(*eventsv1.Event), mentions ...string) {
				e := handlerEvent(admNodeA, pol)
				if change == nil {
					Expect(handlerA.Create(ctx, e, client.DryRunAll)).To(Succeed())
					return
				}
				change(e)
				expectDenied(handlerA.Create(ctx, e, client.DryRunAll), metav1.StatusReasonForbidden, mentions...)
			},
			Entry("(the handler's own event is admitted)", nil),
			Entry("about a Secret", func(e *eventsv1.Event) {
				e.Regarding = corev1.ObjectReference{Kind: "Secret", APIVersion: "v1", Namespace: "nmoverlay", Name: "credentials"}
			}, "regarding: nmoverlay-handler records events only about a NodeNetworkConfigurationPolicy (nmstate.io), not Secret v1 nmoverlay/credentials"),
			Entry("about a Secret, in its namespace", func(e *eventsv1.Event) {
				e.Namespace = "nmoverlay"
				e.Regarding = corev1.ObjectReference{Kind: "Secret", APIVersion: "v1", Namespace: "nmoverlay", Name: "credentials"}
			}, "metadata.namespace: nmoverlay-handler records events only in default", "not in nmoverlay"),
			Entry("about its policy, in another namespace", func(e *eventsv1.Event) { e.Namespace = metav1.NamespaceSystem },
				"metadata.namespace", "not in kube-system"),
			Entry("about a Node", func(e *eventsv1.Event) {
				e.Regarding = corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: admNodeB}
			}, "regarding:", "not Node v1 "+admNodeB),
			Entry("about a kind of that name in another group", func(e *eventsv1.Event) { e.Regarding.APIVersion = "example.com/v1" },
				"regarding:", "not NodeNetworkConfigurationPolicy example.com/v1 adm-events"),
			Entry("as another component", func(e *eventsv1.Event) { e.ReportingController = "kubelet" },
				`reportingController: nmoverlay-handler reports as nmoverlay-handler, not "kubelet"`),
			Entry("as the controller", func(e *eventsv1.Event) {
				e.ReportingController, e.ReportingInstance = "nmoverlay-controller", "nmoverlay-controller-"+admNodeA
			}, "reportingController:", `not "nmoverlay-controller"`),
			Entry("of type Normal", func(e *eventsv1.Event) { e.Type = corev1.EventTypeNormal }, `type: nmoverlay-handler records only Warning events`, `not "Normal"`),
			Entry("related to another node", func(e *eventsv1.Event) { e.Related.Name = admNodeB },
				"related: nmoverlay-handler on "+admNodeA+" relates its events to Node "+admNodeA+", not Node "+admNodeB),
			Entry("related to nothing", func(e *eventsv1.Event) { e.Related = nil }, "related:", "not nothing"),
			Entry("reported from another component's instance", func(e *eventsv1.Event) { e.ReportingInstance = "kubelet-" + admNodeA },
				"reportingInstance: nmoverlay-handler reports as nmoverlay-handler-<its host name>", `not "kubelet-`+admNodeA+`"`),
			Entry("with a note in the handler's form naming another node", func(e *eventsv1.Event) { e.Note = "node " + admNodeB + ": failed" },
				`note: nmoverlay-handler on `+admNodeA+` begins a note that names a node with "node `+admNodeA+`: ", not "node `+admNodeB+`"`),
		)

		It("admit any host name (a kubelet may name its node otherwise), and notes not in its form", func() {
			for _, instance := range []string{"nmoverlay-handler-" + strings.ToUpper(admNodeA), "nmoverlay-handler-" + admNodeA + ".example.internal",
				"nmoverlay-handler-ip-10-0-1-2"} {
				e := handlerEvent(admNodeA, pol)
				e.ReportingInstance = instance
				Expect(handlerA.Create(ctx, e, client.DryRunAll)).To(Succeed(), instance)
			}
			e := handlerEvent(admNodeA, pol)
			e.Note = "refused while the overlay is degraded"
			Expect(handlerA.Create(ctx, e, client.DryRunAll)).To(Succeed())
		})

		It("deny every event to a token that names no node", func() {
			expectDenied(unbound.Create(ctx, handlerEvent(admNodeA, pol), client.DryRunAll), metav1.StatusReasonForbidden,
				"nmoverlay-handler may record events only with a token bound to its Pod on a node")
		})

		It("deny adding to another component's event: a patch is checked as the event it makes", func() {
			theirs := handlerEvent(admNodeA, pol)
			theirs.ReportingController, theirs.ReportingInstance = "nmoverlay-controller", "nmoverlay-controller-0"
			create(theirs)
			series := []byte(`{"series":{"count":2,"lastObservedTime":"` + time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") + `"}}`)
			err := handlerA.Patch(ctx, theirs.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, series))
			expectDenied(err, metav1.StatusReasonForbidden, "reportingController:", `not "nmoverlay-controller"`)
			// Its own: admitted.
			mine := handlerEvent(admNodeA, pol)
			Expect(handlerA.Create(ctx, mine)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, mine))).To(Succeed()) })
			Expect(handlerA.Patch(ctx, mine.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, series))).To(Succeed())
		})

		It("hold core v1 events to the same rules, should the handler ever be granted them", func() {
			core := func(regarding corev1.ObjectReference) *corev1.Event {
				e := handlerEvent(admNodeA, pol)
				return &corev1.Event{ObjectMeta: e.ObjectMeta, InvolvedObject: regarding, Related: e.Related, Reason: e.Reason,
					Message: e.Note, Type: e.Type, EventTime: e.EventTime, Action: e.Action,
					ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance}
			}
			secret := corev1.ObjectReference{Kind: "Secret", APIVersion: "v1", Namespace: "nmoverlay", Name: "credentials"}
			err := handlerA.Create(ctx, core(secret), client.DryRunAll)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).NotTo(ContainSubstring("ValidatingAdmissionPolicy"), "RBAC grants no core v1 events")

			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "adm-test-core-events"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}}}}
			create(role)
			create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "adm-test-core-events"},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: handlerSA, Namespace: "nmoverlay"}}})
			// Once RBAC has the binding, the policy sees the request as an events.k8s.io/v1
			// Event: the handler's own passes, one about a Secret does not.
			Eventually(func() error {
				return handlerA.Create(ctx, core(corev1.ObjectReference{Kind: "NodeNetworkConfigurationPolicy", APIVersion: "nmstate.io/v1", Name: pol.Name}), client.DryRunAll)
			}, "10s", "100ms").Should(Succeed())
			expectDenied(handlerA.Create(ctx, core(secret), client.DryRunAll), metav1.StatusReasonForbidden, "regarding:", "not Secret v1 nmoverlay/credentials")
		})
	})

	Context("the policy checks", func() {
		long := strings.Repeat("p", 64)

		DescribeTable("deny a policy that could only fail later, naming the field",
			func(p *nmstatev1.NodeNetworkConfigurationPolicy, mentions ...string) {
				expectDenied(k8s.Create(ctx, p, client.DryRunAll), metav1.StatusReasonInvalid, mentions...)
			},
			Entry("a name longer than a label value", policy(long, nil, `{}`), "metadata.name", "at most 63", "has 64"),
			Entry("a nodeSelector key that is not a label key", policy("adm-bad-key", map[string]string{"node role": "worker"}, `{}`),
				"spec.nodeSelector", `"node role" is not a valid label key`),
			Entry("a nodeSelector key with an empty prefix", policy("adm-bad-prefix", map[string]string{"/worker": ""}, `{}`),
				"spec.nodeSelector", `"/worker" is not a valid label key`),
			Entry("a nodeSelector key name longer than 63", policy("adm-long-key", map[string]string{"example.com/" + strings.Repeat("k", 64): ""}, `{}`),
				"spec.nodeSelector", "is not a valid label key"),
			Entry("a nodeSelector value that is not a label value", policy("adm-bad-value", map[string]string{"role": "worker node"}, `{}`),
				"spec.nodeSelector", `role="worker node" is not a valid label value`),
			Entry("maxUnavailable 0%", withMaxUnavailable(intstr.FromString("0%")), "spec.maxUnavailable", `"0%" is not valid`),
			Entry("maxUnavailable 150%", withMaxUnavailable(intstr.FromString("150%")), "spec.maxUnavailable", `"150%" is not valid`),
			Entry("maxUnavailable 0", withMaxUnavailable(intstr.FromInt32(0)), "spec.maxUnavailable", "0 is not valid"),
			Entry("maxUnavailable -1", withMaxUnavailable(intstr.FromInt32(-1)), "spec.maxUnavailable", "-1 is not valid"),
			Entry("maxUnavailable abc", withMaxUnavailable(intstr.FromString("abc")), "spec.maxUnavailable", `"abc" is not valid`),
			Entry("maxUnavailable a number as a string", withMaxUnavailable(intstr.FromString("3")), "spec.maxUnavailable", `"3" is not valid`),
			Entry("an unknown top-level desiredState key", policy("adm-unknown-key", nil, `{"interfaces":[],"interface":[{"name":"eth1"}]}`),
				"spec.desiredState", `unknown top-level key "interface"`),
			Entry("interfaces that are not a list", policy("adm-iface-map", nil, `{"interfaces":{"name":"eth1","type":"ethernet"}}`),
				"spec.desiredState.interfaces", "must be a list"),
			Entry("routes given as a list", policy("adm-routes-list", nil, `{"routes":[{"destination":"0.0.0.0/0"}]}`),
				"spec.desiredState.routes", "must be a mapping"),
			Entry("netplan's schema mixed with nmstate's", policy("adm-mixed-schemas", nil, `{"network":{"version":2},"interfaces":[]}`),
				"spec.desiredState", `unknown top-level key "network"`, "network: alone"),
		)

		DescribeTable("accept what can work",
			func(p *nmstatev1.NodeNetworkConfigurationPolicy) {
				Expect(k8s.Create(ctx, p, client.DryRunAll)).To(Succeed())
			},
			Entry("a 63-character name", policy(strings.Repeat("p", 63), nil, `{}`)),
			Entry("prefixed, dotted and empty selector labels", policy("adm-selector", map[string]string{
				"node-role.kubernetes.io/worker": "", "kubernetes.io/hostname": "worker-0.example.com", "Zone_1": "A.b-c"}, `{}`)),
			Entry("maxUnavailable 1", withMaxUnavailable(intstr.FromInt32(1))),
			Entry("maxUnavailable 1%", withMaxUnavailable(intstr.FromString("1%"))),
			Entry("maxUnavailable 100%", withMaxUnavailable(intstr.FromString("100%"))),
			Entry("no desiredState", policy("adm-empty", nil, ``)),
			// Keys nmoverlay does not apply are reported by each node's handler, not refused:
			// nmstate knows them.
			Entry("nmstate keys nmoverlay does not support", policy("adm-unsupported", nil,
				`{"route-rules":{"config":[]},"ovs-db":{"external_ids":{}},"hostname":{"config":"h"},"interfaces":null}`)),
			// Which schema a node takes is its backend's (the NMState's spec.backend).
			Entry("netplan's schema", policy("adm-netplan", nil, `{"network":{"version":2,"ethernets":{"eth1":{"dhcp4":true}}}}`)),
		)

		It("check v1beta1 policies too", func() {
			p := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "nmstate.io/v1beta1", "kind": "NodeNetworkConfigurationPolicy",
				"metadata": map[string]any{"name": "adm-v1beta1"},
				"spec":     map[string]any{"maxUnavailable": "150%"},
			}}
			expectDenied(k8s.Create(ctx, p, client.DryRunAll), metav1.StatusReasonInvalid, "spec.maxUnavailable", `"150%"`)
		})

		It("still accept the kubernetes-nmstate example policies", func() {
			for f, obj := range examplePolicies() {
				Expect(k8s.Create(ctx, obj, client.DryRunAll)).To(Succeed(), f)
			}
		})

		It("re-check on update only the fields that change", func() {
			// adm-legacy was stored before the checks: its bad selector and maxUnavailable
			// do not stop an unrelated change...
			p := &nmstatev1.NodeNetworkConfigurationPolicy{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: "adm-legacy"}, p)).To(Succeed())
			p.Labels = map[string]string{"team": "net"}
			Expect(k8s.Update(ctx, p)).To(Succeed())
			// ...but changing one of them is checked.
			p.Spec.MaxUnavailable = ptrTo(intstr.FromString("150%"))
			expectDenied(k8s.Update(ctx, p.DeepCopy()), metav1.StatusReasonInvalid, "spec.maxUnavailable", `"150%"`)
			p.Spec.MaxUnavailable = ptrTo(intstr.FromString("10%"))
			p.Spec.NodeSelector = map[string]string{"bad key": "y"}
			expectDenied(k8s.Update(ctx, p.DeepCopy()), metav1.StatusReasonInvalid, "spec.nodeSelector", `"bad key"`)
			p.Spec.NodeSelector = map[string]string{"good-key": "y"}
			p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":{"name":"eth1"}}`)}
			expectDenied(k8s.Update(ctx, p.DeepCopy()), metav1.StatusReasonInvalid, "spec.desiredState.interfaces")
			p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"eth1","type":"ethernet","mtu":1400}]}`)}
			Expect(k8s.Update(ctx, p)).To(Succeed())
		})

		It("keep spec.capture as it was created: its results live on every node's enactment", func() {
			p := policy("adm-capture", nil, `{"interfaces":[{"name":"{{ capture.nic.interfaces.0.name }}","type":"ethernet","mtu":1400}]}`)
			p.Spec.Capture = map[string]string{"nic": `interfaces.name == "eth1"`}
			create(p)
			p.Labels = map[string]string{"team": "net"}
			p.Spec.DesiredState = shared.State{Raw: []byte(`{"interfaces":[{"name":"{{ capture.nic.interfaces.0.name }}","type":"ethernet","mtu":1500}]}`)}
			Expect(k8s.Update(ctx, p)).To(Succeed(), "the desired state and labels may change")
			for _, changed := range []map[string]string{
				{"nic": `interfaces.name == "eth2"`},
				{"nic": `interfaces.name == "eth1"`, "gw": `routes.running.destination == "0.0.0.0/0"`},
				nil,
			} {
				q := p.DeepCopy()
				q.Spec.Capture = changed
				expectDenied(k8s.Update(ctx, q), metav1.StatusReasonForbidden, "spec.capture: cannot be changed once the policy exists")
			}
			withCapture := policy("adm-capture-later", nil, `{}`)
			create(withCapture)
			withCapture.Spec.Capture = map[string]string{"nic": `interfaces.name == "eth1"`}
			expectDenied(k8s.Update(ctx, withCapture), metav1.StatusReasonForbidden, "spec.capture")
		})
	})
})

func withMaxUnavailable(v intstr.IntOrString) *nmstatev1.NodeNetworkConfigurationPolicy {
	p := policy("adm-max-unavailable", nil, `{}`)
	p.Spec.MaxUnavailable = &v
	return p
}

func ptrTo[T any](v T) *T { return &v }
