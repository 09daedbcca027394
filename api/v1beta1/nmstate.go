package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/nmoverlay/nmoverlay/api/v1"
)

// NMState is the deprecated v1beta1 NMState: the v1 schema, served so that manifests
// written for it apply unchanged.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nmstates,scope=Cluster
// +kubebuilder:deprecatedversion:warning="nmstate.io/v1beta1 NMState is deprecated; use nmstate.io/v1"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NMState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	Spec   v1.NMStateSpec   `json:"spec,omitempty"`
	Status v1.NMStateStatus `json:"status,omitempty"`
}

// NMStateList is a list of v1beta1 NMStates.
// +kubebuilder:object:root=true
type NMStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NMState `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NMState{}, &NMStateList{})
}
