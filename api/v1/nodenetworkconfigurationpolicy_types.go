package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nmoverlay/nmoverlay/api/shared"
)

// NodeNetworkConfigurationPolicySpec is what an administrator wants on the selected nodes.
type NodeNetworkConfigurationPolicySpec struct {
	// NodeSelector selects the nodes the policy applies to; empty selects every node.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Capture holds nmpolicy capture expressions. Kept so existing manifests apply; a
	// policy that uses them is reported as failing on each node (not supported yet).
	// +optional
	Capture map[string]string `json:"capture,omitempty"`

	// DesiredState is the nmstate network state to apply.
	// +optional
	DesiredState shared.State `json:"desiredState,omitempty"`

	// MaxUnavailable is how many (or what share of the) selected nodes may be applying
	// the policy at once. Default "50%", at least one node.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// NodeNetworkConfigurationPolicyStatus is computed from the policy's enactments.
type NodeNetworkConfigurationPolicyStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeNetworkConfigurationPolicy applies a network state to the nodes it selects.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodenetworkconfigurationpolicies,shortName=nncp;nncps,scope=Cluster
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.status=="True")].type`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.status=="True")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeNetworkConfigurationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeNetworkConfigurationPolicySpec   `json:"spec,omitempty"`
	Status NodeNetworkConfigurationPolicyStatus `json:"status,omitempty"`
}

// NodeNetworkConfigurationPolicyList is a list of policies.
// +kubebuilder:object:root=true
type NodeNetworkConfigurationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeNetworkConfigurationPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NodeNetworkConfigurationPolicy{}, &NodeNetworkConfigurationPolicyList{})
}
