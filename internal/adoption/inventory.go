// Package adoption is the cluster side of a move from kubernetes-nmstate: what a cluster
// runs of it and of its API (Read), and whether the move can start and what it will keep
// persistent (Assess). It changes nothing. The node side, the persistent profiles that
// move at each node's first boot on the overlay, is internal/migration's.
package adoption

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// Component is one workload of kubernetes-nmstate's.
type Component struct {
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Images    []string `json:"images"`
	// Ready is the ready replicas (pods, for the handler DaemonSet) of Desired.
	Ready   int32 `json:"ready"`
	Desired int32 `json:"desired"`
}

// CSV is an OLM ClusterServiceVersion of kubernetes-nmstate's operator.
type CSV struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Version   string `json:"version,omitempty"`
	Phase     string `json:"phase,omitempty"`
}

// CRD is one of the nmstate.io CRDs as the cluster has it.
type CRD struct {
	Name    string   `json:"name"`
	Served  []string `json:"served"`
	Storage string   `json:"storage"`
	// Stored are the versions objects may still be stored at in etcd
	// (status.storedVersions): a CRD replacing this one must serve each.
	Stored []string `json:"stored"`
}

// Inventory is what Read found.
type Inventory struct {
	Components []Component `json:"components"`
	CSVs       []CSV       `json:"csvs,omitempty"`
	CRDs       []CRD       `json:"crds"`
	NMStates   []string    `json:"nmstates"`
	Policies   []nmstatev1.NodeNetworkConfigurationPolicy
	Enactments []v1beta1.NodeNetworkConfigurationEnactment
	States     []v1beta1.NodeNetworkState
	Nodes      []corev1.Node
}

// handlerComponent is the label kubernetes-nmstate's handler DaemonSet's pods carry; its
// other workloads carry app=kubernetes-nmstate, and its operator
// app=kubernetes-nmstate-operator (deploy/handler/operator.yaml, deploy/operator/).
const (
	appLabel         = "app"
	operandApp       = "kubernetes-nmstate"
	operatorApp      = "kubernetes-nmstate-operator"
	operatorName     = "nmstate-operator"
	handlerComponent = "kubernetes-nmstate-handler"
)

// CRDNames are the nmstate.io CRDs, kubernetes-nmstate's and nmoverlay's alike.
var CRDNames = []string{"nmstates.nmstate.io", "nodenetworkconfigurationenactments.nmstate.io",
	"nodenetworkconfigurationpolicies.nmstate.io", "nodenetworkstates.nmstate.io"}

var csvKind = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersionList"}

// Read takes the inventory: kubernetes-nmstate's workloads in any namespace (its operator
// by name or label, its operands by their label), its OLM CSVs where OLM is installed, the
// nmstate.io CRDs, and the objects of their kinds.
func Read(ctx context.Context, c client.Reader) (*Inventory, error) {
	inv := &Inventory{}
	deployments := &appsv1.DeploymentList{}
	if err := c.List(ctx, deployments); err != nil {
		return nil, fmt.Errorf("listing Deployments: %w", err)
	}
	for _, d := range deployments.Items {
		if deploymentRole(d.Name, d.Labels) != roleNone {
			inv.Components = append(inv.Components, Component{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name,
				Images: images(d.Spec.Template.Spec), Ready: d.Status.ReadyReplicas, Desired: replicas(d.Spec.Replicas)})
		}
	}
	daemonSets := &appsv1.DaemonSetList{}
	if err := c.List(ctx, daemonSets); err != nil {
		return nil, fmt.Errorf("listing DaemonSets: %w", err)
	}
	for _, d := range daemonSets.Items {
		if operandDaemonSet(d.Labels, d.Spec.Template.Labels) {
			inv.Components = append(inv.Components, Component{Kind: "DaemonSet", Namespace: d.Namespace, Name: d.Name,
				Images: images(d.Spec.Template.Spec), Ready: d.Status.NumberReady, Desired: d.Status.DesiredNumberScheduled})
		}
	}
	csvs := &unstructured.UnstructuredList{}
	csvs.SetGroupVersionKind(csvKind)
	switch err := c.List(ctx, csvs); {
	case meta.IsNoMatchError(err):
	case err != nil:
		return nil, fmt.Errorf("listing ClusterServiceVersions: %w", err)
	default:
		for _, o := range csvs.Items {
			if operatorCSVName(o.GetName()) {
				version, _, _ := unstructured.NestedString(o.Object, "spec", "version")
				phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
				inv.CSVs = append(inv.CSVs, CSV{Namespace: o.GetNamespace(), Name: o.GetName(), Version: version, Phase: phase})
			}
		}
	}
	for _, name := range CRDNames {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return nil, fmt.Errorf("reading the CRD %s: %w", name, err)
		}
		d := CRD{Name: name, Stored: crd.Status.StoredVersions}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				d.Served = append(d.Served, v.Name)
			}
			if v.Storage {
				d.Storage = v.Name
			}
		}
		inv.CRDs = append(inv.CRDs, d)
	}
	if len(inv.CRDs) < len(CRDNames) {
		return inv, nil // the kinds themselves are missing: nothing of them to read
	}
	nmstates := &nmstatev1.NMStateList{}
	policies := &nmstatev1.NodeNetworkConfigurationPolicyList{}
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	states := &v1beta1.NodeNetworkStateList{}
	nodes := &corev1.NodeList{}
	for _, l := range []client.ObjectList{nmstates, policies, enactments, states, nodes} {
		if err := c.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	for _, n := range nmstates.Items {
		inv.NMStates = append(inv.NMStates, n.Name)
	}
	inv.Policies, inv.Enactments, inv.States, inv.Nodes = policies.Items, enactments.Items, states.Items, nodes.Items
	return inv, nil
}

// deploymentRole is what a Deployment of this name and these labels is of kubernetes-nmstate's:
// its operator (by name or label), one of its operands (by label), or none.
func deploymentRole(name string, labels map[string]string) role {
	switch {
	case name == operatorName || labels[appLabel] == operatorApp:
		return roleOperator
	case labels[appLabel] == operandApp:
		return roleOperand
	}
	return roleNone
}

// operandDaemonSet: a DaemonSet of kubernetes-nmstate's, by its label or its pods' (the
// handler's component).
func operandDaemonSet(labels, podLabels map[string]string) bool {
	return labels[appLabel] == operandApp || podLabels["component"] == handlerComponent
}

// operatorCSVName: an OLM ClusterServiceVersion of kubernetes-nmstate's operator, by name.
func operatorCSVName(name string) bool { return strings.HasPrefix(name, operatorApp+".") }

// Namespace is kubernetes-nmstate's namespace: its operator's, else its CSV's, else its
// first workload's.
func Namespace(inv *Inventory) string {
	for _, c := range inv.Components {
		if c.Name == operatorName {
			return c.Namespace
		}
	}
	if len(inv.CSVs) > 0 {
		return inv.CSVs[0].Namespace
	}
	if len(inv.Components) > 0 {
		return inv.Components[0].Namespace
	}
	return ""
}

func images(spec corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.Containers {
		if !slices.Contains(out, c.Image) {
			out = append(out, c.Image)
		}
	}
	return out
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
