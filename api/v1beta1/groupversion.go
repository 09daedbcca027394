// Package v1beta1 is nmstate.io/v1beta1: NodeNetworkConfigurationEnactment and
// NodeNetworkState, and the deprecated v1beta1 NodeNetworkConfigurationPolicy that older
// manifests still use (same schema as v1, served, not stored).
// +kubebuilder:object:generate=true
// +groupName=nmstate.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	GroupVersion  = schema.GroupVersion{Group: "nmstate.io", Version: "v1beta1"}
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	AddToScheme   = SchemeBuilder.AddToScheme
)
