package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NMStateName is the one NMState the operator acts on, as kubernetes-nmstate's: any other
// is reported as ignored in its own status.
const NMStateName = "nmstate"

// NMStateSpec says where the handler and the controller run and how the handler probes.
// kubernetes-nmstate's fields keep their meaning: NodeSelector, Tolerations and Affinity
// go to the handler's DaemonSet; the Infra ones to the controller's Deployment (upstream's
// webhook, metrics and console plugin, none of which nmoverlay runs).
type NMStateSpec struct {
	// NodeSelector is added to the handler DaemonSet's (which always selects
	// kubernetes.io/os=linux): the handler runs only on nodes with every label.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations replace the handler DaemonSet's default, which tolerates every taint.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity is the handler DaemonSet's pod affinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// InfraNodeSelector is the controller Deployment's node selector.
	// +optional
	InfraNodeSelector map[string]string `json:"infraNodeSelector,omitempty"`
	// InfraTolerations are the controller Deployment's tolerations.
	// +optional
	InfraTolerations []corev1.Toleration `json:"infraTolerations,omitempty"`
	// InfraAffinity is the controller Deployment's pod affinity.
	// +optional
	InfraAffinity *corev1.Affinity `json:"infraAffinity,omitempty"`
	// SelfSignConfiguration is kubernetes-nmstate's webhook certificate rotation. nmoverlay
	// runs no webhook (its admission checks are ValidatingAdmissionPolicies in the API
	// server): accepted so existing manifests apply, and not used.
	// +optional
	SelfSignConfiguration *SelfSignConfiguration `json:"selfSignConfiguration,omitempty"`
	// ProbeConfiguration tunes the checks between an apply and its commit, for every
	// policy of every node.
	// +optional
	ProbeConfiguration ProbeConfiguration `json:"probeConfiguration,omitempty"`
	// Backend applies the policies on the nodes, and says their desired state's schema:
	// networkmanager (nmstate's schema, through nmoverlay's engine over NetworkManager) or
	// netplan (netplan's schema, network: {version: 2, ...}, through the node's own
	// netplan and NetworkManager). A policy in the other schema is refused, naming both.
	// +kubebuilder:validation:Enum=networkmanager;netplan
	// +kubebuilder:default=networkmanager
	// +optional
	Backend string `json:"backend,omitempty"`
	// LogLevel of the handler and the controller.
	// +kubebuilder:validation:Enum=info;debug;error
	// +kubebuilder:default=info
	// +optional
	LogLevel string `json:"logLevel,omitempty"`
	// MigrateFrom, set by nmoverlay migrate while a cluster moves from kubernetes-nmstate,
	// has each handler keep, while its node is not on the overlay yet, the plan of the
	// persistent profiles the policies in force wrote (kubernetes-nmstate's handler writes
	// them into NetworkManager's persistent keyfile dir); nm-overlay moves them out at the
	// node's first boot on the overlay, into a backup on the node.
	// +kubebuilder:validation:Enum=kubernetes-nmstate
	// +optional
	MigrateFrom string `json:"migrateFrom,omitempty"`
	// RebootGate keeps workloads off a rebooted node until its policies are back: with
	// Taint, a node whose enactments were applied in an older boot is tainted
	// nmoverlay.io/reconverging:NoSchedule until every policy selecting it is Available in
	// the new boot, fails there, or a timeout passes. None (or empty, the default) is off.
	// +kubebuilder:validation:Enum=Taint;None
	// +optional
	RebootGate string `json:"rebootGate,omitempty"`
}

// Reboot gates, as spec.rebootGate and the controller's and handler's --reboot-gate name
// them.
const (
	RebootGateTaint = "Taint"
	RebootGateNone  = "None"
)

// MigrateFromKubernetesNMState is spec.migrateFrom for a cluster that ran
// kubernetes-nmstate.
const MigrateFromKubernetesNMState = "kubernetes-nmstate"

// Backends, as spec.backend and the handler's --backend name them.
const (
	BackendNetworkManager = "networkmanager"
	BackendNetplan        = "netplan"
)

// SelfSignConfiguration is kept for kubernetes-nmstate's manifests; see NMStateSpec.
type SelfSignConfiguration struct {
	CARotateInterval    string `json:"caRotateInterval,omitempty"`
	CAOverlapInterval   string `json:"caOverlapInterval,omitempty"`
	CertRotateInterval  string `json:"certRotateInterval,omitempty"`
	CertOverlapInterval string `json:"certOverlapInterval,omitempty"`
}

// Probe names, as the handler's enactments report them.
const (
	ProbeDefaultGateway = "default-gateway"
	ProbeDNS            = "dns"
)

// ProbeConfiguration: the probes guard the node's own connection to the cluster, which
// every policy on a node shares (they apply in one transaction), so they are set per
// cluster here and not per policy.
type ProbeConfiguration struct {
	// DNS is kubernetes-nmstate's: the name the DNS probe resolves. Default: the API
	// server's host name, if it is a name (else no DNS probe).
	// +optional
	DNS DNSProbeConfiguration `json:"dns,omitempty"`
	// Timeout is how long the probes may take to pass after an apply (a bridge's
	// forwarding delay, a bond's negotiation) before it is rolled back. Default 45s.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Disabled probes are not run. Only the default-gateway ping and the DNS lookup can be
	// disabled: the API server and Node Ready probes are what guarantees that a change
	// that cuts the node off the cluster is rolled back.
	// +optional
	// +listType=set
	Disabled []ProbeName `json:"disabled,omitempty"`
}

// ProbeName is a probe that may be disabled.
// +kubebuilder:validation:Enum=default-gateway;dns
type ProbeName string

// DNSProbeConfiguration is kubernetes-nmstate's.
type DNSProbeConfiguration struct {
	// +optional
	Host string `json:"host,omitempty"`
}

// NMState condition types and reasons.
const (
	NMStateAvailable   = "Available"
	NMStateProgressing = "Progressing"
	NMStateDegraded    = "Degraded"

	// Reasons, kubernetes-nmstate's (api/shared/nmstate_types.go): every condition carries
	// the reason of the state the NMState is in.
	// ReasonSuccessfullyDeployed: the handler runs on every node it selects and the
	// controller is up.
	ReasonSuccessfullyDeployed = "SuccessfullyDeployed"
	// ReasonDeploying: the handler or the controller is being (re)deployed.
	ReasonDeploying = "Deploying"
	// ReasonInternalError: an object could not be applied; the message says which and why.
	ReasonInternalError = "InternalError"
	// ReasonReconvergenceFailed (Degraded): a node's reboot gate was lifted without its
	// policies Available in its new boot (one failed there, or the timeout passed); the
	// message names the nodes. Cleared once their policies are back.
	ReasonReconvergenceFailed = "ReconvergenceFailed"
	// ReasonIgnored: this NMState is not the singleton named NMStateName (which
	// kubernetes-nmstate deletes; nmoverlay leaves an administrator's object be).
	ReasonIgnored = "Ignored"
)

// NMStateStatus says whether the handler and the controller are deployed.
type NMStateStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec's generation the conditions are about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// NMState deploys nmoverlay's handler and controller; there is one, named nmstate.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nmstates,scope=Cluster
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NMState struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	Spec   NMStateSpec   `json:"spec,omitempty"`
	Status NMStateStatus `json:"status,omitempty"`
}

// NMStateList is a list of NMStates.
// +kubebuilder:object:root=true
type NMStateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NMState `json:"items"`
}

func init() {
	SchemeBuilder.Register(&NMState{}, &NMStateList{})
}
