//go:build integration

package integration_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api"
	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
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

func labelledEnactment(name, node string) *v1beta1.NodeNetworkConfigurationEnactment {
	e := &v1beta1.NodeNetworkConfigurationEnactment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if node != "" {
		e.Labels = map[string]string{shared.NodeLabel: node, shared.PolicyLabel: "some-policy"}
	}
	return e
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
		create(legacy)

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
		Expect(policies).To(HaveLen(4), "two policies, each with its binding")

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
		token := func(bound *authenticationv1.BoundObjectReference) string {
			tr, err := cs.CoreV1().ServiceAccounts("nmoverlay").CreateToken(ctx, handlerSA, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600)), BoundObjectRef: bound},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			return tr.Status.Token
		}
		handlerA = clientWithToken(token(&authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}))
		unbound = clientWithToken(token(nil))

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
			e := labelledEnactment(admNodeA+".some-policy", admNodeA)
			Expect(handlerA.Create(ctx, e)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, e))).To(Succeed()) })
			e.Status.BootID = "boot-1"
			Expect(handlerA.Status().Update(ctx, e)).To(Succeed())
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
			expectDenied(handlerA.Create(ctx, labelledEnactment(admNodeB+".some-policy", admNodeB)), metav1.StatusReasonForbidden, admNodeA, "not "+admNodeB)
			// The label decides, not the name.
			expectDenied(handlerA.Create(ctx, labelledEnactment(admNodeA+".mislabelled", admNodeB)), metav1.StatusReasonForbidden, admNodeA, "not "+admNodeB)
			expectDenied(handlerA.Create(ctx, labelledEnactment(admNodeA+".unlabelled", "")), metav1.StatusReasonForbidden, admNodeA, "without the nmstate.io/node label")
			// Its own label under a name that claims the other node.
			expectDenied(handlerA.Create(ctx, labelledEnactment(admNodeB+".misnamed", admNodeA)), metav1.StatusReasonForbidden,
				"names its enactments "+admNodeA+".<policy>, not "+admNodeB+".misnamed")

			theirs := labelledEnactment(admNodeB+".some-policy", admNodeB)
			create(theirs)
			theirs.Status.BootID = "boot-taken-over"
			expectDenied(handlerA.Status().Update(ctx, theirs.DeepCopy()), metav1.StatusReasonForbidden, admNodeA, "not "+admNodeB, "(status)")
			expectDenied(handlerA.Delete(ctx, theirs.DeepCopy()), metav1.StatusReasonForbidden, admNodeA, "not "+admNodeB)
			got := &v1beta1.NodeNetworkConfigurationEnactment{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), got)).To(Succeed(), "still there")
			Expect(got.Status.BootID).To(BeEmpty())
		})

		It("denies relabelling its own enactment to another node, even where RBAC would allow the update", func() {
			// The handler's role has no update on enactments (only on their status), so RBAC
			// alone stops this today; grant it here to show the admission policy holds too.
			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "adm-test-enactment-update"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{"nmstate.io"}, Resources: []string{"nodenetworkconfigurationenactments"}, Verbs: []string{"update"}}}}
			create(role)
			create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "adm-test-enactment-update"},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: handlerSA, Namespace: "nmoverlay"}}})

			mine := labelledEnactment(admNodeA+".relabel", admNodeA)
			Expect(handlerA.Create(ctx, mine)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, mine))).To(Succeed()) })
			// An update that keeps the node is admitted (once RBAC has the new binding).
			Eventually(func() error {
				e := &v1beta1.NodeNetworkConfigurationEnactment{}
				if err := handlerA.Get(ctx, client.ObjectKeyFromObject(mine), e); err != nil {
					return err
				}
				e.Annotations = map[string]string{"example.com/touched": "yes"}
				return handlerA.Update(ctx, e)
			}, "10s", "100ms").Should(Succeed())

			e := &v1beta1.NodeNetworkConfigurationEnactment{}
			Expect(handlerA.Get(ctx, client.ObjectKeyFromObject(mine), e)).To(Succeed())
			e.Labels[shared.NodeLabel] = admNodeB
			expectDenied(handlerA.Update(ctx, e), metav1.StatusReasonForbidden, "nmoverlay-handler on "+admNodeA, "not "+admNodeB)
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(mine), e)).To(Succeed())
			Expect(e.Labels).To(HaveKeyWithValue(shared.NodeLabel, admNodeA))
		})

		It("denies every write to a token that names no node, saying so", func() {
			err := unbound.Create(ctx, &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: admNodeA}})
			expectDenied(err, metav1.StatusReasonForbidden, "this token names no node", "NodeNetworkState "+admNodeA)
			err = unbound.Create(ctx, labelledEnactment(admNodeA+".some-policy", admNodeA))
			expectDenied(err, metav1.StatusReasonForbidden, "this token names no node")
		})

		It("leaves other users alone", func() {
			// The administrator (and so the controller's and other tools' writes) is not
			// the handler: the matchCondition keeps the policy off them.
			e := labelledEnactment(admNodeA+".by-admin", admNodeB)
			Expect(k8s.Create(ctx, e, client.DryRunAll)).To(Succeed())
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
	})
})

func withMaxUnavailable(v intstr.IntOrString) *nmstatev1.NodeNetworkConfigurationPolicy {
	p := policy("adm-max-unavailable", nil, `{}`)
	p.Spec.MaxUnavailable = &v
	return p
}

func ptrTo[T any](v T) *T { return &v }
