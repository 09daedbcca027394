package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nmoverlay/nmoverlay/api/shared"
	v1 "github.com/nmoverlay/nmoverlay/api/v1"
)

// NodeNetworkConfigurationPolicy is the deprecated v1beta1 policy: the v1 schema, served
// so that manifests written for it apply unchanged.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodenetworkconfigurationpolicies,shortName=nncp;nncps,scope=Cluster
// +kubebuilder:deprecatedversion:warning="nmstate.io/v1beta1 NodeNetworkConfigurationPolicy is deprecated; use nmstate.io/v1"
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.status=="True")].type`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.status=="True")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeNetworkConfigurationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   v1.NodeNetworkConfigurationPolicySpec   `json:"spec,omitempty"`
	Status v1.NodeNetworkConfigurationPolicyStatus `json:"status,omitempty"`
}

// NodeNetworkConfigurationPolicyList is a list of v1beta1 policies.
// +kubebuilder:object:root=true
type NodeNetworkConfigurationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeNetworkConfigurationPolicy `json:"items"`
}

// NodeNetworkConfigurationEnactmentStatus is one policy on one node.
type NodeNetworkConfigurationEnactmentStatus struct {
	// DesiredState is the policy's desired state as this node applied it.
	// +optional
	DesiredState shared.State `json:"desiredState,omitzero"`
	// PolicyGeneration is the policy generation this status is about.
	// +optional
	PolicyGeneration int64 `json:"policyGeneration,omitempty"`
	// BootID is the node boot in which the policy was last applied: a new boot makes the
	// node re-apply every policy.
	// +optional
	BootID string `json:"bootID,omitempty"`
	// CapturedStates are the results of the policy's spec.capture on this node, as
	// kubernetes-nmstate stores them: evaluated once, against the node's state before the
	// policy was first applied, and reused on every later apply (a reboot re-converges to
	// what was captured first, not to what the policy's own change made of the node).
	// +optional
	CapturedStates map[string]CapturedState `json:"capturedStates,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CapturedState is one capture's result.
type CapturedState struct {
	// +optional
	State shared.State `json:"state,omitempty"`
	// +optional
	MetaInfo CaptureMetaInfo `json:"metaInfo,omitempty"`
}

// CaptureMetaInfo says when, and by which evaluator, a capture was evaluated.
type CaptureMetaInfo struct {
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	TimeStamp metav1.Time `json:"time,omitempty"`
}

// NodeNetworkConfigurationEnactment reports one policy on one node; its name is
// <node>.<policy>, and it is owned by the Node. It has no status subresource (unlike
// kubernetes-nmstate's): the cluster controller creates each one with its status (Pending,
// or Progressing with its grant), so a node waiting for a rollout slot costs one write, not
// two; the admission policy keeps a handler to the status of its own enactments. Unknown
// fields at its root are kept, as kubernetes-nmstate's CRD keeps them.
// +kubebuilder:object:root=true
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:resource:path=nodenetworkconfigurationenactments,shortName=nnce;nnces,scope=Cluster
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.status=="True")].type`
// +kubebuilder:printcolumn:name="Status Age",type=date,JSONPath=`.status.conditions[?(@.status=="True")].lastTransitionTime`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.status=="True")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeNetworkConfigurationEnactment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status NodeNetworkConfigurationEnactmentStatus `json:"status,omitempty"`
}

// NodeNetworkConfigurationEnactmentList is a list of enactments.
// +kubebuilder:object:root=true
type NodeNetworkConfigurationEnactmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeNetworkConfigurationEnactment `json:"items"`
}

// EphemeralProfile is a profile that lives only in the node's tmpfs layer.
type EphemeralProfile struct {
	File   string `json:"file"`
	Change string `json:"change"` // added, modified or deleted
	// +optional
	ID string `json:"id,omitempty"`
	// +optional
	Interface string `json:"interface,omitempty"`
	// Owned is true for profiles the engine wrote for a policy; an ephemeral profile
	// nobody owns is lost at the next reboot and nothing re-creates it.
	Owned bool `json:"owned"`
}

// OverlayStatus is the node's keyfile overlay as nm-overlay sees it.
type OverlayStatus struct {
	// Degraded, when set, says why the overlay is not in use; policies are then refused.
	// +optional
	Degraded string `json:"degraded,omitempty"`
	// +optional
	Ephemeral []EphemeralProfile `json:"ephemeral,omitempty"`
	// Migration is the node's move from kubernetes-nmstate, while the NMState asks for one
	// (spec.migrateFrom).
	// +optional
	Migration *MigrationStatus `json:"migration,omitempty"`
}

// MigrationStatus is a node's move from kubernetes-nmstate: which persistent profiles its
// policies wrote, moved out of the persistent keyfile dir at its first boot on the
// overlay, and which stay.
type MigrationStatus struct {
	// Move are the persistent profiles the policies in force wrote, to move at the node's
	// next boot on the overlay (the handler's plan).
	// +optional
	Move []PersistentProfile `json:"move,omitempty"`
	// Stay are the persistent profiles that stay, each with why.
	// +optional
	Stay []PersistentProfile `json:"stay,omitempty"`
	// Moved are the profiles the last move took out, each with what became of it, and
	// Backup the node's dir that keeps them (nm-overlay restore-profiles).
	// +optional
	Moved []PersistentProfile `json:"moved,omitempty"`
	// +optional
	Backup string `json:"backup,omitempty"`
}

// PersistentProfile is one profile of the node's persistent keyfile dir.
type PersistentProfile struct {
	File string `json:"file"`
	// +optional
	Interface string `json:"interface,omitempty"`
	// +optional
	Type string `json:"type,omitempty"`
	// Policies are the policies in force that wrote it.
	// +optional
	Policies []string `json:"policies,omitempty"`
	// Detail is why it stays, or what became of it.
	// +optional
	Detail string `json:"detail,omitempty"`
}

// NodeNetworkStateStatus is a node's current network state.
type NodeNetworkStateStatus struct {
	// +optional
	CurrentState shared.State `json:"currentState,omitempty"`
	// +optional
	LastSuccessfulUpdateTime metav1.Time `json:"lastSuccessfulUpdateTime,omitempty"`
	// +optional
	HostNetworkManagerVersion string `json:"hostNetworkManagerVersion,omitempty"`
	// HandlerNetworkManagerVersion is the NetworkManager the handler applies policies
	// through: the node's own, over D-Bus (kubernetes-nmstate declares the field and
	// leaves it empty).
	// +optional
	HandlerNetworkManagerVersion string `json:"handlerNetworkManagerVersion,omitempty"`
	// HandlerNmstateVersion names the engine that reads and applies nmstate's schema on
	// the node, where kubernetes-nmstate reports nmstatectl's version: nmoverlay's
	// release and its backend.
	// +optional
	HandlerNmstateVersion string `json:"handlerNmstateVersion,omitempty"`
	// HostNetworkManagerCapabilities are what the node's NetworkManager can apply that not
	// every release can: the capabilities some fields need (bond-port-priority), and its
	// plugins (ovs). A policy that needs one the node lacks is refused on it, naming it.
	// +optional
	HostNetworkManagerCapabilities []string `json:"hostNetworkManagerCapabilities,omitempty"`
	// Conditions: Available while the handler reads the node's state, Failing (with why)
	// when it cannot; currentState is then the last state read.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Backend applies the policies on this node (the handler's --backend, the NMState
	// CR's spec.backend): networkmanager or netplan. A policy's desired state is in its
	// schema: nmstate's, or netplan's.
	// +optional
	Backend string `json:"backend,omitempty"`
	// +optional
	Overlay *OverlayStatus `json:"overlay,omitempty"`
	// Drift lists, per policy in effect, what on the node differs from what it committed,
	// changed outside nmoverlay ("policy: changed outside nmoverlay: ..."). Its enactment
	// is Failing meanwhile, unless the policy opted in to being re-applied.
	// +optional
	Drift []string `json:"drift,omitempty"`
	// Summarized says what of currentState was left out, and why: a node whose state would
	// not fit in one API request (MaxStateBytes) reports the most useful part of it.
	// +optional
	Summarized string `json:"summarized,omitempty"`
}

// NodeNetworkState is a node's network state; its name is the node's.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodenetworkstates,shortName=nns,scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeNetworkState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status NodeNetworkStateStatus `json:"status,omitempty"`
}

// NodeNetworkStateList is a list of node states.
// +kubebuilder:object:root=true
type NodeNetworkStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeNetworkState `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NodeNetworkConfigurationPolicy{}, &NodeNetworkConfigurationPolicyList{},
		&NodeNetworkConfigurationEnactment{}, &NodeNetworkConfigurationEnactmentList{},
		&NodeNetworkState{}, &NodeNetworkStateList{})
}
