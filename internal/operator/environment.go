package operator

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/deploy"
)

// Environment is what the operand depends on besides the NMState: what the cluster
// serves and how it is configured. The operator reads it at each pass (Operator.environment).
type Environment struct {
	// CRDs are the installed CustomResourceDefinitions the operand's optional kinds need
	// (deploy.CRDOf), by name, with their UIDs: a CRD deleted and created again takes its
	// objects with it, and a new UID has them applied again.
	CRDs map[string]types.UID
	// OpenShift: the cluster is OpenShift (its Infrastructure API is served). Its service
	// CA signs the metrics Services' certificates, which the daemons serve and Prometheus
	// verifies, and its platform Prometheus is given the reads it discovers targets with.
	OpenShift bool
	// SingleNode: OpenShift's Infrastructure says the control plane is one node
	// (controlPlaneTopology SingleReplica). A PodDisruptionBudget there would only block
	// the node's own drain: the controller gets none.
	SingleNode bool
	// TLS is the cluster's TLS security profile, for the daemons' metrics endpoints.
	TLS TLSProfile
}

// crdNames are the CRDs the operand's optional kinds need.
func crdNames(base []*unstructured.Unstructured) map[string]bool {
	names := map[string]bool{}
	for _, o := range base {
		if crd := deploy.CRDOf(o.GroupVersionKind().GroupKind()); crd != "" {
			names[crd] = true
		}
	}
	return names
}

// crdMeta is a CustomResourceDefinition as the operator caches it: its metadata alone.
func crdMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	return m
}

// environment reads the Environment: the CRDs from the cache of their metadata, the
// Infrastructure and the APIServer (where served) from the cache.
func (r *Operator) environment(ctx context.Context) (Environment, error) {
	env := Environment{CRDs: map[string]types.UID{}, OpenShift: r.InfrastructureServed}
	for name := range crdNames(r.Base) {
		m := crdMeta()
		err := r.Client.Get(ctx, client.ObjectKey{Name: name}, m)
		if client.IgnoreNotFound(err) != nil {
			return env, fmt.Errorf("CustomResourceDefinition %s: %w", name, err)
		}
		if err == nil && m.DeletionTimestamp.IsZero() {
			env.CRDs[name] = m.UID
		}
	}
	if r.InfrastructureServed {
		infra := &unstructured.Unstructured{}
		infra.SetGroupVersionKind(InfrastructureGVK)
		if err := r.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, infra); client.IgnoreNotFound(err) != nil {
			return env, fmt.Errorf("Infrastructure cluster: %w", err)
		}
		topology, _, _ := unstructured.NestedString(infra.Object, "status", "controlPlaneTopology")
		env.SingleNode = topology == "SingleReplica"
	}
	var apiServer *unstructured.Unstructured
	if r.APIServerServed {
		apiServer = &unstructured.Unstructured{}
		apiServer.SetGroupVersionKind(APIServerGVK)
		err := r.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, apiServer)
		if client.IgnoreNotFound(err) != nil {
			return env, fmt.Errorf("APIServer cluster: %w", err)
		}
		if err != nil {
			apiServer = nil
		}
	}
	var err error
	env.TLS, err = TLSProfileOf(apiServer)
	return env, err
}
